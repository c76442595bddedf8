"""Atomic file writes: a file appears under its final name complete, or not at all.

Every output of the package (results files, predictions, configs, converted weights) is written to a
temporary name beside its destination and renamed into place, so a crash or an error never leaves a
half-written file under the name a user or a later run reads. Paths go through `tf.io.gfile`, so
`gs://` and other TensorFlow file systems work as for the original scripts.
"""

import contextlib
import json
import os
import socket
import sys
import time
import uuid

import tensorflow as tf
from absl import logging

from albert_tf.errors import InputError


def check_directory(path, name):
    """Raises `InputError` when `path`, given as the argument `name` for a directory to write in, is an existing
    file (or a file stands where one of its parent directories would be)."""
    if not path:
        return
    parent = os.fspath(path)
    while parent and not tf.io.gfile.exists(parent):
        up = os.path.dirname(parent.rstrip("/"))
        if up == parent:
            return
        parent = up
    if parent and tf.io.gfile.exists(parent) and not tf.io.gfile.isdir(parent):
        where = "is a file" if parent == os.fspath(path) else f"is below the file `{parent}`"
        raise InputError(f"`{name}={path}` {where}; expected a directory to write in (an existing one or a new "
                         "path).")


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


# --- one writer per output directory ------------------------------------------------------------------------

LOCK_FILE = ".albert_tf.lock"
_held_locks = {}   # real path of a directory -> how many nested `output_lock` blocks of this process hold it


def _lock_text():
    return json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime(
        "%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)[:300]}) + "\n"


def _read_holder(path):
    """The lock's `{"host", "pid", ...}`, or None when it cannot be read (removed meanwhile, or not ours)."""
    try:
        with open(path, encoding="utf-8") as f:
            holder = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) and isinstance(holder.get("pid"), int) else None


def _process_is_gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:   # alive, another user's
        return False
    return False


def _take_lock(path):
    """Creates the lock file `path` complete or not at all (a full temporary file hard-linked to `path`: the link
    fails when `path` exists); returns whether it did."""
    tmp = _temporary_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(_lock_text())
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _acquire(directory, path):
    for _ in range(3):
        if _take_lock(path):
            return
        holder = _read_holder(path)
        if holder is None:
            if not os.path.exists(path):
                continue   # released meanwhile
            raise InputError(f"`{directory}` has a lock file {path} that is not albert_tf's: remove it if no run "
                             "writes there.")
        if holder.get("host") == socket.gethostname() and _process_is_gone(holder["pid"]):
            logging.warning("Taking over the lock of %s from process %d, which is no longer running (%s).",
                            directory, holder["pid"], path)
            stale = _temporary_name(path)
            try:
                os.rename(path, stale)   # only one of two runs taking over at once moves it
                os.remove(stale)
            except FileNotFoundError:
                pass
            continue
        raise InputError(f"`{directory}` is in use by another run: process {holder['pid']} on {holder.get('host')} "
                         f"since {holder.get('started')} (`{holder.get('command', '')}`). Wait for it or give "
                         f"another output directory; if that run is gone, remove {path}.")
    raise InputError(f"Cannot take the lock {path} of `{directory}`: other runs take it at the same time.")


@contextlib.contextmanager
def output_lock(directory, hold=True, name=LOCK_FILE):
    """Holds `directory` for this run: one writer per output directory.

    Makes `directory` and creates `<directory>/.albert_tf.lock` (host, PID, start time and command line) atomically;
    removes it on exit. A second run (another process) is refused with an `InputError` naming the directory and the
    holder; a lock whose process on this host is gone (killed) is taken over with a warning. Blocks of one process
    nest. `hold=False` (a multi-worker job's non-chief workers: the chief holds it) and directories on other file
    systems than the local one (`gs://`: no atomic create) only make the directory. `name`: the lock file's name, for
    an output that is one file of a directory others write too (`output_file_locks`).
    """
    directory = os.fspath(directory)
    tf.io.gfile.makedirs(directory)
    if not hold or "://" in directory:
        yield
        return
    path = os.path.join(directory, name)
    key = os.path.realpath(path)
    if not _held_locks.get(key):
        _acquire(directory, path)
    _held_locks[key] = _held_locks.get(key, 0) + 1
    try:
        yield
    finally:
        _held_locks[key] -= 1
        if not _held_locks[key]:
            del _held_locks[key]
            holder = _read_holder(path)
            if holder and holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
                os.remove(path)


@contextlib.contextmanager
def output_file_locks(paths):
    """Holds each output file of `paths` for this run (`output_lock` on `.<file name>.albert_tf.lock` beside it):
    two runs writing one file are refused, runs writing other files of one directory are not."""
    with contextlib.ExitStack() as stack:
        for path in paths:
            directory, base = os.path.split(os.fspath(path))
            directory = directory or "."
            if os.path.isdir(directory):   # a missing directory is the writer's to refuse or make
                stack.enter_context(output_lock(directory, name=f".{base}{LOCK_FILE}"))
        yield
