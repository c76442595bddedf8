"""The registered Keras names of albert_tf's classes, known to Keras from `import albert_tf` on, without TensorFlow.

A `.keras` file names its classes `albert_tf>AlbertClassifier`, ...; `keras.models.load_model` finds them only
in Keras's table of custom objects, which the classes' `@register_keras_serializable` decorators fill when their
modules are imported, and those modules import TensorFlow. `import albert_tf` stays light (no TensorFlow) and
still makes a `.keras` file load: `install()` puts a stand-in for each name (`Deferred`: its `from_config`
imports the class's module and hands over) into Keras's table through the public
`keras.saving.get_custom_objects()`, either at once when Keras is already imported or right after Keras is
imported (an import hook that runs once). A stand-in never replaces a class registered already, and the class's
own decorator replaces its stand-in when its module is imported. `import albert_tf` costs the same as before;
the first `import keras` after it costs the table's 16 entries.

`names()` must list every class that albert_tf registers (a test compares it with Keras's table).
"""

import importlib
import importlib.abc
import importlib.util
import sys

PACKAGE = "albert_tf"

# Registered class name -> the module that defines (and registers) it: the shared layers, models and optimizers
# here; the heads of the tasks from each task package's `KERAS_CLASSES` (`task_names`).
SHARED_NAMES = {
    "AdamWeightDecay": "albert_tf.training.optimization",
    "AlbertAttention": "albert_tf.layers.attention",
    "AlbertEmbeddings": "albert_tf.layers.embeddings",
    "AlbertLearningRateSchedule": "albert_tf.training.optimization",
    "AlbertMaskedLMHead": "albert_tf.layers.heads",
    "AlbertModel": "albert_tf.models.albert_model",
    "AlbertOutputProjection": "albert_tf.layers.heads",
    "AlbertPreprocessor": "albert_tf.text.preprocessor",
    "AlbertTransformerBlock": "albert_tf.layers.transformer",
    "Lamb": "albert_tf.training.optimization",
}
TASKS_PACKAGE = "albert_tf.tasks"


def task_names():
    """{class name: module} of every task package's `KERAS_CLASSES` (its `model` module defines them); reads the
    task packages' `__init__` modules only, which import nothing."""
    tasks = importlib.import_module(TASKS_PACKAGE)
    found = {}
    for task in tasks.names():
        package = importlib.import_module(f"{TASKS_PACKAGE}.{task}")
        for name in getattr(package, "KERAS_CLASSES", ()):
            found[name] = f"{TASKS_PACKAGE}.{task}.model"
    return found


def names():
    """{class name: module} of every class albert_tf registers with Keras."""
    return dict(SHARED_NAMES, **task_names())


class Deferred:
    """Stands in Keras's table for the class `name` of `module` until that module is imported."""

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def load(self):
        """The class itself (importing its module registers it in place of this stand-in)."""
        return getattr(importlib.import_module(self.module), self.name)

    def from_config(self, config, *args, **kwargs):
        return self.load().from_config(config, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.load()(*args, **kwargs)

    def __repr__(self):
        return f"Deferred({self.module}.{self.name})"


def register():
    """Puts a `Deferred` for each of `names()` that Keras does not know yet into Keras's custom objects."""
    import keras  # pylint: disable=import-outside-toplevel  (imported already: see `install`)

    table = keras.saving.get_custom_objects()
    for name, module in names().items():
        table.setdefault(f"{PACKAGE}>{name}", Deferred(module, name))


class _AfterKerasImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of `keras` so that `register()` runs once Keras is imported.

    It stays first in `sys.meta_path` until Keras's module has run: a `find_spec("keras")` that imports nothing
    (TensorFlow probes for Keras so when it loads) gets a wrapped spec that is thrown away, and the import that
    follows must be wrapped too.
    """

    def __init__(self):
        self._searching = False

    def find_spec(self, fullname, path, target=None):
        del path, target
        if fullname != "keras" or self._searching:
            return None
        self._searching = True          # the search below passes through this finder again
        try:
            spec = importlib.util.find_spec("keras")
        finally:
            self._searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            exec_module(module)
            try:
                register()
            except Exception:  # pylint: disable=broad-except  (never break `import keras`)
                pass

        spec.loader.exec_module = exec_and_register
        return spec


def install():
    """Makes Keras know `names()`: now when Keras is imported, else right after its import."""
    if "keras" in sys.modules and hasattr(sys.modules["keras"], "saving"):
        register()
    elif not any(isinstance(finder, _AfterKerasImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKerasImport())
