"""albert_tf: ALBERT for TensorFlow 2 / Keras 3, faithful to Google's original release.

`import albert_tf` does not import TensorFlow: the public names below are loaded on first use (PEP 562), so
a command can configure TensorFlow's logging before it starts. It does check that the environment holds a
single TensorFlow distribution (`albert_tf.install_check`).

The model classes (`AlbertModel`, `AlbertClassifier`, ...) are those of the registered model kinds
(`albert_tf.registry`): the heads live in their task packages (`albert_tf/tasks/<task>/model.py`) and are looked up
through the registry, so a head added in a new task folder is a name here without an edit (`__all__` lists the
documented ones). After `import albert_tf`, `keras.models.load_model` reads the `.keras` files of every albert_tf
model (`albert_tf.keras_names`).

The layout (docs/architecture.md): `layers/`, `models/` (the encoder), `text/`, `checkpoints/`, `training/`,
`export/`, `tasks/<task>/`, `quickstart/`; `albert_tf.tokenization`, `albert_tf.text_ops`, `albert_tf.lite`,
`albert_tf.serving` and `albert_tf.session_model` are the modules of their folders under their documented names.
"""

from albert_tf import install_check, keras_names, lazy

install_check.check_single_tensorflow()
# `keras.models.load_model` finds `albert_tf>AlbertClassifier`, ... without TensorFlow imported here.
keras_names.install()

__version__ = "0.1.0"

# Public name -> module that defines it.
_EXPORTS = {
    "PRESETS": "albert_tf.config",
    "AlbertConfig": "albert_tf.config",
    "AlbertModel": "albert_tf.models.albert_model",
    "AlbertPreprocessor": "albert_tf.text.preprocessor",
    "pipeline": "albert_tf.pipelines",
    # Loads no TensorFlow: a Python program calls it before its first TensorFlow import, as the commands do.
    "pick_cpu_backend": "albert_tf.commands.app",
}
# The heads: the Keras classes that each task package names (`KERAS_CLASSES`, read without importing TensorFlow),
# found through the registry on first use (`registry.by_class_name`).
_MODEL_CLASSES = tuple(keras_names.task_names())
_SUBMODULES = ("checkpoints", "commands", "config", "data", "errors", "export", "fileio", "layers", "models",
               "options", "pipelines", "quickstart", "registry", "reproduce", "tasks", "text", "training")
# Documented module names -> the module of the package that they are.
_MODULE_ALIASES = {
    "lite": "albert_tf.export.lite",
    "serving": "albert_tf.serving_spec",
    "session_model": "albert_tf.export.session_model",
    "text_ops": "albert_tf.text.ops",
    "tokenization": "albert_tf.text.tokenization",
    "preprocessing": "albert_tf.text.preprocessor",
}

__all__ = sorted([*_EXPORTS, *_MODEL_CLASSES, *_SUBMODULES, *_MODULE_ALIASES, "__version__"])


def __getattr__(name):
    if name.startswith("Albert") and name not in _EXPORTS:
        from albert_tf import registry  # pylint: disable=import-outside-toplevel  (loads TensorFlow)
        value = registry.by_class_name(name)
        if value is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value
    if name == "pipeline" and "pipeline" not in globals():
        # The pipelines are inference on raw text: reached before TensorFlow loads, they run on the CPU kernels
        # the commands pick (oneDNN on x86-64 with AVX2; a value the user set is kept), as the runners do.
        from albert_tf.commands.app import pick_cpu_backend  # pylint: disable=import-outside-toplevel

        pick_cpu_backend()
    return lazy.attribute(globals(), name, _EXPORTS, _SUBMODULES, _MODULE_ALIASES)


def __dir__():
    return lazy.names(globals())
