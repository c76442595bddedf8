"""The tasks: one package each (`pretraining`, `glue`, `squad`, `race`, `ner`), holding what only that task knows:
its data reader and features, its head (the Keras model, which registers its model kind in `albert_tf.registry`),
its `Task` and options, its pipeline and its serving spec.

Nothing outside `albert_tf/tasks/<task>/` (and its `run_<task>.py`) names a task: the shared machinery finds the
tasks through the registry, which imports the `kind` module of every package here (`albert_tf.registry.load`).
A new task is a new package here and its runner script.
"""

import pkgutil


def names():
    """The task packages, sorted (found on disk: a new folder here is a task without an edit)."""
    return tuple(sorted(module.name for module in pkgutil.iter_modules(__path__) if module.ispkg))
