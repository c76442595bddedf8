"""The exception for mistakes in what the user gave, which every command reports on one line.

`InputError` marks an error in the user's files, flags, configs, checkpoints or data (a missing file, a
config that does not fit a checkpoint, a truncated shard, a flag out of range). It is a `ValueError`, so
Python callers that catch `ValueError` keep working. The commands (`albert_tf.cli.run_app`) print
`<command>: error: <message>` for it and exit with status 2; any other exception is a bug in albert_tf and
keeps its traceback.
"""


class InputError(ValueError):
    """An error in what the user gave: files, flags, configs, checkpoints, data."""
