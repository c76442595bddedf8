"""Atomic file writes: a file appears under its final name complete, or not at all.

Every output of the package (results files, predictions, configs, converted weights) is written to a
temporary name beside its destination and renamed into place, so a crash or an error never leaves a
half-written file under the name a user or a later run reads. Paths go through `tf.io.gfile`, so
`gs://` and other TensorFlow file systems work as for the original scripts.
"""

import contextlib
import os
import uuid

import tensorflow as tf
from absl import logging

from albert_tf.errors import InputError


def _temporary_name(path):
    return f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; on success it is renamed to `path`, on error removed.

    For writers that take a file name (e.g. `tf.io.TFRecordWriter`, `model.save_weights`):

        with atomic_path("out.tfrecord") as tmp:
            with tf.io.TFRecordWriter(tmp) as writer:
                ...
    """
    path = os.fspath(path)
    tmp = _temporary_name(path)
    try:
        yield tmp
        tf.io.gfile.rename(tmp, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_prefix(prefix, suffixes):
    """Yields a temporary prefix beside `prefix` for writers that make several files (`<prefix><suffix>`).

    On success each `<tmp><suffix>` is renamed to `<prefix><suffix>`, in the order of `suffixes` (put the
    file that readers look for first, e.g. a checkpoint's `.index`, last); on error every one is removed.
    """
    prefix = os.fspath(prefix)
    directory, name = os.path.split(prefix)
    tmp = os.path.join(directory, f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
        for suffix in suffixes:
            tf.io.gfile.rename(tmp + suffix, prefix + suffix, overwrite=True)
    finally:
        for suffix in suffixes:
            if tf.io.gfile.exists(tmp + suffix):
                tf.io.gfile.remove(tmp + suffix)


def write_text_atomic(path, text):
    """Writes the str `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp:
        with tf.io.gfile.GFile(tmp, "w") as f:
            f.write(text)


def write_bytes_atomic(path, data):
    """Writes the bytes `data` to `path` atomically."""
    with atomic_path(path) as tmp:
        with tf.io.gfile.GFile(tmp, "wb") as f:
            f.write(data)


def copy_atomic(src, dst):
    """Copies the file `src` to `dst` atomically (overwriting `dst`)."""
    with atomic_path(dst) as tmp:
        tf.io.gfile.copy(src, tmp, overwrite=True)


def utf8_error(path, data, error):
    """The `InputError` for bytes of `path` that are not UTF-8, naming the line and the bytes."""
    line = data.count(b"\n", 0, error.start) + 1
    return InputError(f"{path}:{line}: expected UTF-8 text, got the bytes "
                      f"{data[error.start:error.start + 4]!r} (is the file in another encoding?)")


def read_text(path, lines=False):
    """The whole text of a UTF-8 file; bytes that are not UTF-8 are an `InputError` naming `path:line`.

    With `lines` (a file of lines), a last line without its line end is read as it is, with a warning: a file
    cut inside its last line cannot be told from a complete one otherwise.

    The original readers (`tokenization.convert_to_unicode`) decode with `errors="ignore"`, which drops such
    bytes without a word; a file in another encoding (Latin-1, UTF-16) is refused here instead.
    """
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e) from None
    if lines and text and not text.endswith("\n"):
        logging.warning("%s:%d: the last line has no line end (a cut file?); it is read as it is.", path,
                        text.count("\n") + 1)
    return text
