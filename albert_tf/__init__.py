"""albert_tf: ALBERT for TensorFlow 2 / Keras 3, faithful to Google's original release.

`import albert_tf` does not import TensorFlow: the public names below are loaded on first use (PEP 562), so
a command can configure TensorFlow's logging before it starts. It does check that the environment holds a
single TensorFlow distribution (`albert_tf.install_check`).

The model classes (`AlbertModel`, `AlbertClassifier`, ...) are those of the registered model kinds
(`albert_tf.registry`): a kind added in `albert_tf/models/` is a public name here without an edit. After
`import albert_tf`, `keras.models.load_model` reads the `.keras` files of every albert_tf model
(`albert_tf.keras_names`).
"""

import importlib

from albert_tf import install_check, keras_names

install_check.check_single_tensorflow()
# `keras.models.load_model` finds `albert_tf>AlbertClassifier`, ... without TensorFlow imported here.
keras_names.install()

__version__ = "0.1.0"

# Public name -> module that defines it.
_EXPORTS = {
    "PRESETS": "albert_tf.config",
    "AlbertConfig": "albert_tf.config",
    "AlbertPreprocessor": "albert_tf.preprocessing",
    "pipeline": "albert_tf.pipelines",
}
_SUBMODULES = ("checkpoints", "config", "data", "errors", "export", "fileio", "layers", "lite", "models",
               "quickstart", "registry", "serving", "session_model", "text_ops", "tokenization", "training")


def _model_class_names():
    """The class names of the registered model kinds (loads them, and so TensorFlow)."""
    from albert_tf import registry
    return [kind.model_class.__name__ for kind in registry.kinds()]


def __getattr__(name):
    if name == "__all__":   # `from albert_tf import *`: computed, as it lists the registered model classes.
        return sorted(set(_EXPORTS) | set(_model_class_names())) + ["__version__"]
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name.startswith("Albert") and name in _model_class_names():
        from albert_tf import registry
        value = registry.by_class_name(name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES) | set(_model_class_names()))
