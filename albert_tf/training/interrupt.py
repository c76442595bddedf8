"""SIGINT and SIGTERM during a command: finish the step in flight, checkpoint, one line, exit 130 / 143.

`handling_signals()` installs handlers for both signals (the preemption notice of TPU VMs and of most batch
schedulers is SIGTERM) for the length of a `with` block:

* while a training loop listens (`listening(callback)`), a signal calls the loop's `callback`, which sets the
  stop flag that its `tf.function` reads before each step: the step in flight finishes, no new one starts, the
  loop writes its checkpoint and raises `Interrupted(signum, step)`;
* otherwise (writing features, evaluating, predicting) a signal raises `Interrupted(signum)` at once, and the
  temporary files of the atomic writers (`albert_tf.fileio`) are removed as for any other exception;
* a second signal raises at once, whatever runs.

A Python signal handler runs only when the main thread runs Python code, which it does not while a
`tf.function` executes; so the handlers also write the signal number to a socket (`signal.set_wakeup_fd`)
that a watcher thread reads, and that thread calls the listeners at once. `Interrupted` is a
`KeyboardInterrupt`, so callers that catch Ctrl-C keep working; the commands (`albert_tf.commands.app.run_app`) print
`interrupted at step N; the same command resumes` and exit with 128 + the signal number.

Under a multi-worker strategy each worker stops on its own signal; a preemption signals every worker.
"""

import contextlib
import signal
import socket
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command was interrupted by `signum`; `step` is the training step checkpointed, or None."""

    def __init__(self, signum, step=None):
        super().__init__(signum, step)
        self.signum = signum
        self.step = step

    @property
    def exit_code(self):
        """128 + the signal number: 130 for SIGINT, 143 for SIGTERM (the shells' convention)."""
        return 128 + int(self.signum)

    def line(self):
        """The one line a command prints."""
        where = f" at step {self.step}" if self.step is not None else ""
        return f"interrupted{where}; the same command resumes"


class _State:
    def __init__(self):
        self.depth = 0
        self.signum = None        # the first signal received inside the outermost `handling_signals`
        self.count = 0            # signals the Python handler has seen
        self.listeners = []
        self.lock = threading.Lock()

    def notify(self, signum):
        with self.lock:
            if self.signum is None:
                self.signum = signum
            listeners = list(self.listeners)
        for callback in listeners:
            callback(signum)


_STATE = _State()


def requested():
    """The signal number received inside `handling_signals()`, or None."""
    return _STATE.signum


def _handler(signum, frame):
    del frame
    _STATE.count += 1
    _STATE.notify(signum)
    if not _STATE.listeners or _STATE.count > 1:
        raise Interrupted(_STATE.signum or signum)


def _watch(reader):
    while True:
        try:
            data = reader.recv(16)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in SIGNALS:
                _STATE.notify(signum)


@contextlib.contextmanager
def handling_signals():
    """Handles SIGINT and SIGTERM as the module says, inside the block (nested blocks share the outer one).

    Outside the main thread signals cannot be handled: the block then changes nothing.
    """
    if _STATE.depth:
        _STATE.depth += 1
        try:
            yield
        finally:
            _STATE.depth -= 1
        return
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = {signum: signal.signal(signum, _handler) for signum in SIGNALS}
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(reader,), name="albert_tf-signals", daemon=True)
    watcher.start()
    _STATE.depth, _STATE.signum, _STATE.count = 1, None, 0
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _STATE.depth = 0
        reader.shutdown(socket.SHUT_RDWR)
        watcher.join(timeout=5)
        reader.close()
        writer.close()


@contextlib.contextmanager
def listening(callback):
    """Inside the block a signal calls `callback(signum)` (from any thread) instead of raising at once."""
    with handling_signals():
        with _STATE.lock:
            _STATE.listeners.append(callback)
            signum = _STATE.signum
        if signum is not None:
            callback(signum)
        try:
            yield
        finally:
            with _STATE.lock:
                _STATE.listeners.remove(callback)
