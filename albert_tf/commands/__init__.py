"""Every albert_tf command line, in one layer above the library: what the user types, the flags, the start.

A command is an `albert_tf.options.Command` (its name, help text, options dataclasses and the one library call it
makes), declared as data beside that call: the shared commands in the modules of this package (`export`,
`convert`, `download`, `train_vocab`, `normalize_spm`, `reproduce`), the quickstart's in its application (`albert_tf.quickstart`),
the task runners in their task folders (each task package's `COMMANDS` names them, so that this layer finds
them without importing or naming a task). `run(name)` starts TensorFlow quietly (`app.quiet_tensorflow_start`),
imports the command's module and runs it (`app.run_command`). The console scripts of setup.cfg (`console`), the
`python -m albert_tf.<runner>` modules, `python -m albert_tf.commands NAME` and the checkout's `run_*.py` scripts
are doors into `run(name)`. Importing this package loads no TensorFlow.
"""

import importlib

TASKS_PACKAGE = "albert_tf.tasks"

# The commands of the shared library: name -> "module:attribute" of its `Command`.
SHARED = {
    "albert-convert": "albert_tf.commands.convert:COMMAND",
    "albert-download": "albert_tf.commands.download:COMMAND",
    "albert-export": "albert_tf.commands.export:COMMAND",
    "albert-normalize-spm": "albert_tf.commands.normalize_spm:COMMAND",
    "albert-quickstart": "albert_tf.quickstart.run:COMMAND",
    "albert-reproduce": "albert_tf.commands.reproduce:COMMAND",
    "albert-train-vocab": "albert_tf.commands.train_vocab:COMMAND",
}


def declarations():
    """`{name: "module:attribute"}` of every command: the shared ones and those each task package's `COMMANDS`
    declares (read from the packages' `__init__` modules, which import nothing)."""
    found = dict(SHARED)
    tasks = importlib.import_module(TASKS_PACKAGE)
    for task in tasks.names():
        found.update(getattr(importlib.import_module(f"{TASKS_PACKAGE}.{task}"), "COMMANDS", {}))
    return found


def find(name):
    """The `Command` named `name` (its module imported)."""
    known = declarations()
    if name not in known:
        raise KeyError(f"No albert_tf command {name!r}; the commands are {', '.join(sorted(known))}.")
    module, _, attribute = known[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def run(name):
    """Runs the command `name` as this process's command line (the body of every door)."""
    from albert_tf.commands import app  # pylint: disable=import-outside-toplevel  (no TensorFlow)

    app.quiet_tensorflow_start()
    app.run_command(find(name))
