"""Package attributes loaded on first use (PEP 562), so that importing a package loads no TensorFlow."""

import importlib


def attribute(namespace, name, names=None, submodules=(), modules=None):
    """The attribute `name` of the package whose globals are `namespace`, imported now and kept there.

    Args:
        namespace: dict, the package's `globals()`.
        name: str, the attribute asked for.
        names: optional dict, public name -> the module that defines it.
        submodules: names of the package's submodules.
        modules: optional dict, a documented module name -> the module it is.

    Raises:
        AttributeError: `name` is none of these.
    """
    package = namespace["__name__"]
    if names and name in names:
        value = getattr(importlib.import_module(names[name]), name)
    elif name in submodules:
        value = importlib.import_module(f"{package}.{name}")
    elif modules and name in modules:
        value = importlib.import_module(modules[name])
    else:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    namespace[name] = value
    return value


def names(namespace):
    """`dir()` of a package with lazy attributes: what it holds and what its `__all__` lists."""
    return sorted(set(namespace) | set(namespace.get("__all__", ())))
