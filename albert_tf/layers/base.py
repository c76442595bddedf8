"""`ConfigLayer`: the base of the ALBERT layers, whose constructor arguments are their Keras config."""

import keras


class ConfigLayer(keras.layers.Layer):
    """A `keras.layers.Layer` that keeps its constructor arguments for `get_config`.

    The constructor calls `self.keep_arguments(name=value, ...)` after `super().__init__(**kwargs)`: each
    argument becomes an attribute of its name, and `get_config` adds them, in that order, to Keras' own keys
    (`name`, `trainable`, `dtype`), so that `from_config` (and a `.keras` load) rebuilds the same layer.
    """

    _argument_names = ()

    def keep_arguments(self, **arguments):
        """Holds each keyword as an attribute of its name and as a key of `get_config`."""
        for name, value in arguments.items():
            setattr(self, name, value)
        self._argument_names = tuple(arguments)

    def get_config(self):
        config = super().get_config()
        config.update((name, getattr(self, name)) for name in self._argument_names)
        return config


def sublayers(layer):
    """Every `keras.layers.Layer` that `layer` holds, at any depth (not `layer` itself), each once, parents
    before children: a walk of the instances' attributes and of the lists, tuples and dicts in them, by public
    Python introspection (`vars`), so that nothing depends on Keras' private layer tracking."""
    found, seen = [], {id(layer)}

    def visit(value):
        if isinstance(value, keras.layers.Layer):
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
                for attribute in vars(value).values():
                    visit(attribute)
        elif isinstance(value, dict):
            for item in list(value.values()):
                visit(item)
        elif isinstance(value, (list, tuple)):
            for item in list(value):
                visit(item)

    for attribute in vars(layer).values():
        visit(attribute)
    return found
