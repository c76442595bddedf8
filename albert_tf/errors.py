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


# Lines of a graph-mode TensorFlow error that say where it was raised, not what went wrong.
_TF_CONTEXT_LINE = re.compile(r"^(Graph execution error:|Detected at node .*|File \".*|\[\[\{\{node .*|"
                              r"Detected unsupported operations.*)$")


def tf_error_text(error):
    """The cause of a TensorFlow error on one line, without its op context: `corrupted record at 128` rather than
    `Graph execution error:` (the first line of a graph-mode error) or `{{function_node
    __wrapped__IteratorGetNext...}} ... [Op:IteratorGetNext]`."""
    message = getattr(error, "message", None)
    text = message if isinstance(message, str) else str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if not _TF_CONTEXT_LINE.match(line)]
    text = (causes or lines or [type(error).__name__])[0]
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"'\s+failed with ", ": ", text)   # `truncated record at 464' failed with Read less bytes ...`
    return re.sub(r"\s*\[Op:[^\]]*\](\s*name:\s*\S*)?\s*$", "", text).strip() or type(error).__name__


EXPORT_NEEDS_TENSORFLOW = (
    "A SavedModel export runs on Keras' TensorFlow backend, and KERAS_BACKEND is {backend!r}: export the run's "
    "checkpoint with `KERAS_BACKEND=tensorflow albert-export`; a JAX run's output directory is read there (the "
    "runners under JAX do this themselves for `export_dir`).")


LITE_NEEDS_TENSORFLOW = (
    "--format={format} converts a TensorFlow graph with TensorFlow's LiteRT converter, and KERAS_BACKEND is "
    "{backend!r}: run `KERAS_BACKEND=tensorflow albert-export --format={format}` (it reads a JAX run's checkpoints).")


def check_export_backend(format="saved_model"):
    """Raises `InputError` (one line, before anything is written) unless Keras runs on TensorFlow: a SavedModel
    is a TensorFlow graph, traced from the model's TensorFlow variables, and a LiteRT export (`format` tflite or
    mediapipe) is converted from one."""
    import keras   # only when an export is asked for

    backend = keras.backend.backend()
    if backend != "tensorflow":
        if format in ("tflite", "mediapipe"):
            raise InputError(LITE_NEEDS_TENSORFLOW.format(backend=backend, format=format))
        raise InputError(EXPORT_NEEDS_TENSORFLOW.format(backend=backend))
