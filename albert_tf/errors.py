"""The exception for mistakes in what the user gave, which every command reports on one line.

`InputError` marks an error in the user's files, flags, configs, checkpoints or data (a missing file, a
config that does not fit a checkpoint, a truncated shard, a flag out of range). It is a `ValueError`, so
Python callers that catch `ValueError` keep working. The commands (`albert_tf.commands.app.run_app`) print
`<command>: error: <message>` for it and exit with status 2; any other exception is a bug in albert_tf and
keeps its traceback.
"""

import re


class InputError(ValueError):
    """An error in what the user gave: files, flags, configs, checkpoints, data."""


class MissingPackageError(ImportError):
    """An optional package that the asked-for feature needs is not installed (the message names it)."""


def tf_error_text(error):
    """The first line of a TensorFlow error's message without its op context: `corrupted record at 0 (Is this
    even a TFRecord file?)` rather than `{{function_node __wrapped__IteratorGetNext...}} ... [Op:IteratorGetNext]`."""
    message = getattr(error, "message", None)
    text = message if isinstance(message, str) else str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
    return re.sub(r"\s*\[Op:[^\]]*\](\s*name:\s*\S*)?\s*$", "", text).strip() or type(error).__name__
