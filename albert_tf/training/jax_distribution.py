"""The devices of a run under KERAS_BACKEND=jax: a `keras.distribution` in place of the `tf.distribute` strategy.

* `keras.distribution.DataParallel` over every device of every process by default: the variables replicated,
  each batch split along its first axis over the `batch` mesh axis;
* with `model_parallel_devices` M > 1, `keras.distribution.ModelParallel` over a `(batch, model)` mesh of
  `(devices / M, M)`: a `LayoutMap` shards the attention projections (`query`, `key`, `value`: their output
  axis; `output_dense`: its input axis) and the FFN kernels (`ffn`: output axis; `ffn_output`: input axis) over
  `model`, as Megatron does, for xlarge/xxlarge;
* many hosts: `keras.distribution.initialize()` when `KERAS_DISTRIBUTION_NUM_PROCESSES` > 1 (its
  `KERAS_DISTRIBUTION_JOB_ADDRESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`; on a TPU pod slice JAX finds the hosts
  itself), with gloo collectives between the processes of a CPU stand-in. Process 0 is the chief: it holds the
  output directory's lock and writes checkpoints, summaries and results. The hosts wait for each other at most
  `ALBERT_HOSTS_TIMEOUT` seconds (default 300): a host that never starts, or two given the same process id, end
  the run in one line within that time, and SIGINT / SIGTERM end the wait at once. The same time bounds XLA's
  CPU collectives (`--xla_cpu_collective_call_terminate_timeout_seconds`, 40 s by default), which otherwise abort
  an overloaded host's step.

`JaxDevices` answers what the driver asks of a strategy (`scope()`, `num_replicas_in_sync`, the chief).
"""

import ctypes
import os
import signal
import sys
import threading

import keras
from absl import logging

from albert_tf.errors import InputError
from albert_tf.training import interrupt

HOSTS_TIMEOUT_VARIABLE = "ALBERT_HOSTS_TIMEOUT"
DEFAULT_HOSTS_TIMEOUT = 300
_COLLECTIVE_TIMEOUT_FLAG = "--xla_cpu_collective_call_terminate_timeout_seconds"

# The kernels a `model` mesh axis shards: (path regex, the kernel's axis that is split). Column-parallel
# projections split their output axis, row-parallel ones (after them) their input axis.
_MODEL_PARALLEL_KERNELS = ((r".*/(query|key|value)/kernel$", -1), (r".*/output_dense/kernel$", 0),
                           (r".*/ffn/kernel$", -1), (r".*/ffn_output/kernel$", 0))


class JaxDevices:
    """The run's `keras.distribution` and mesh: `scope()` builds variables on it; `num_replicas_in_sync` is the
    size of its `batch` axis (what a global batch must divide by); `process_index`, `process_count`, `is_chief`."""

    def __init__(self, distribution, mesh_shape, process_index, process_count):
        self.distribution = distribution
        self.mesh_shape = dict(mesh_shape)
        self.num_replicas_in_sync = self.mesh_shape["batch"]
        self.process_index = process_index
        self.process_count = process_count
        self.is_chief = process_index == 0

    def scope(self):
        return self.distribution.scope()

    def describe(self):
        axes = " x ".join(f"{name} {size}" for name, size in self.mesh_shape.items())
        return (f"{type(self.distribution).__name__} on a mesh of {axes} ({self.process_count} process(es), this "
                f"one {self.process_index})")


_initialized = {}


def hosts_timeout():
    """The seconds the hosts of a run wait for each other (`ALBERT_HOSTS_TIMEOUT`, default 300)."""
    text = os.environ.get(HOSTS_TIMEOUT_VARIABLE, "") or str(DEFAULT_HOSTS_TIMEOUT)
    try:
        seconds = int(text)
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise InputError(f"{HOSTS_TIMEOUT_VARIABLE}={text!r} must be a whole number of seconds, at least 1.")
    return seconds


def _give_up(line, code):
    """Ends the process with one line: the wait runs inside XLA, which no Python exception interrupts."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    os._exit(code)   # pylint: disable=protected-access


def _bounded_initialize(count, timeout):
    """`keras.distribution.initialize()`, ended after `timeout` seconds (one line, exit 1) or by a signal (one
    line, 128 + the signal): JAX's own wait would end in an XLA fatal error after minutes, deaf to SIGTERM."""
    done = threading.Event()
    process = os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "?")
    address = os.environ.get("KERAS_DISTRIBUTION_JOB_ADDRESSES", "(found by JAX)")

    def watch():
        if not done.wait(timeout):
            _give_up(f"The {count} processes of KERAS_DISTRIBUTION_NUM_PROCESSES={count} did not all meet at "
                     f"{address} within {timeout} s (this is process {process}): a host did not start, or two "
                     f"were given the same KERAS_DISTRIBUTION_PROCESS_ID. Start every process with its own id "
                     f"0..{count - 1}; {HOSTS_TIMEOUT_VARIABLE} sets the wait.", 1)

    def on_signal(signum):
        if not done.is_set():
            _give_up(f"interrupted while waiting for the other processes (process {process} of {count}); "
                     "nothing was written", 128 + int(signum))

    threading.Thread(target=watch, name="albert_tf-hosts", daemon=True).start()
    abort_line = AbortLine(f"The {count} processes of KERAS_DISTRIBUTION_NUM_PROCESSES={count} could not meet at "
                           f"{address} (XLA's message above; this is process {process}): two processes were given "
                           "the same KERAS_DISTRIBUTION_PROCESS_ID, or one started again while the others waited. "
                           f"Start every process once, each with its own id 0..{count - 1}.")
    abort_line.install()
    try:
        with interrupt.listening(on_signal):
            logging.info("Waiting up to %d s for the %d processes (%s sets it).", timeout, count,
                         HOSTS_TIMEOUT_VARIABLE)
            keras.distribution.initialize()
            done.set()
    finally:
        abort_line.remove()


def initialize_processes():
    """`keras.distribution.initialize()` once per process when `KERAS_DISTRIBUTION_NUM_PROCESSES` asks for several
    (gloo collectives on the CPU), the wait bounded by `hosts_timeout()`; returns `(process_index,
    process_count)`."""
    import jax

    count = int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1") or 1)
    if count > 1 and not _initialized:
        timeout = hosts_timeout()
        flags = os.environ.get("XLA_FLAGS", "")
        if _COLLECTIVE_TIMEOUT_FLAG not in flags:     # read by XLA when its CPU client starts
            os.environ["XLA_FLAGS"] = f"{flags} {_COLLECTIVE_TIMEOUT_FLAG}={timeout}".strip()
        # The CPU's cross-process collectives go through gloo (set before any computation; TPUs and GPUs have
        # their own).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        _bounded_initialize(count, timeout)
        _initialized["done"] = True
    return jax.process_index(), jax.process_count()


class AbortLine:
    """While installed, an abort of this process by XLA (a fatal error of its own, which no Python code outlives)
    prints one line first: `say(text)` sets it. Used while the processes meet (a second process of the same id
    makes XLA abort the first) and while a run of several processes steps (XLA's CPU collectives abort a step that
    a process did not reach in time: "Termination timeout for all reduce", an overloaded or stopped host)."""

    _HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)

    def __init__(self, text=""):
        self.line = b""
        self.say(text)
        self._libc = ctypes.CDLL(None)
        self._libc.signal.restype = ctypes.c_void_p
        self._libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        self._handler = self._HANDLER(self._write)        # kept: the C library calls it
        self._previous = None

    def _write(self, signum):
        del signum
        os.write(2, self.line)

    def say(self, text):
        self.line = f"\n{text}\n".encode()

    def say_step(self, process_index, step, saved):
        """The line of a run stepping: the step reached and the newest checkpoint, which the abort leaves intact."""
        newest = f"the newest, step {saved}" if saved else "none written yet"
        self.say(f"XLA aborted process {process_index} after step {step}: a collective between the processes timed "
                 f"out (XLA's message above: an overloaded or stopped host). The checkpoints are intact ({newest}): "
                 "the same command resumes.")

    def install(self):
        if self._previous is None:
            self._previous = self._libc.signal(signal.SIGABRT, ctypes.cast(self._handler, ctypes.c_void_p))

    def remove(self):
        if self._previous is not None:
            self._libc.signal(signal.SIGABRT, self._previous)
            self._previous = None


def check_tpu(use_tpu, strategy):
    """Raises `InputError` when `use_tpu` (or `strategy=tpu`) asks for a TPU and JAX finds none, as the
    TensorFlow backend refuses (`distribution.tpu_strategy`)."""
    import jax

    if not (use_tpu or strategy == "tpu"):
        return
    platform = jax.devices()[0].platform
    if platform != "tpu":
        raise InputError(f"`strategy=tpu` (or `use_tpu`) needs a TPU, and none was found (JAX finds {platform} "
                         "devices only). On a TPU VM install jax[tpu]; on a GPU or the CPU leave `use_tpu` out.")


def check_model_parallel(config, model_parallel_devices, config_file):
    """Raises `InputError` naming every dimension of `config` that the `model` mesh axis shards (the attention's
    `hidden_size`, the FFN's `intermediate_size`) and `model_parallel_devices` does not divide."""
    model = int(model_parallel_devices or 1)
    if model <= 1:
        return
    dims = {"hidden_size": config.hidden_size, "intermediate_size": config.intermediate_size}
    bad = [f"{name} {value}" for name, value in dims.items() if value % model]
    if bad:
        raise InputError(f"`model_parallel_devices={model}` must divide every dimension it shards: {', '.join(bad)} "
                         f"({config_file}) does not divide by {model}.")


def jax_devices(model_parallel_devices=1):
    """The `JaxDevices` of this run: every device of every process, data parallel, or model parallel over
    `model_parallel_devices` devices per replica. Logs the mesh."""
    import jax

    process_index, process_count = initialize_processes()
    devices = jax.devices()
    model = int(model_parallel_devices or 1)
    if model < 1 or len(devices) % model:
        raise InputError(f"`model_parallel_devices={model_parallel_devices}` must divide the {len(devices)} devices.")
    if model == 1:
        distribution = keras.distribution.DataParallel(devices=devices)
        shape = {"batch": len(devices)}
    else:
        shape = {"batch": len(devices) // model, "model": model}
        mesh = keras.distribution.DeviceMesh(shape=tuple(shape.values()), axis_names=tuple(shape), devices=devices)
        layout_map = keras.distribution.LayoutMap(mesh)
        for pattern, axis in _MODEL_PARALLEL_KERNELS:
            layout_map[pattern] = ("model", None) if axis == 0 else (None, "model")
        distribution = keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
    result = JaxDevices(distribution, shape, process_index, process_count)
    logging.info("JAX devices: %s, %s.", result.describe(), devices[0].platform)
    return result


def data_sharding(jax_devices_, batch_axis=0, rank=2):
    """The `jax.sharding.NamedSharding` of an input array of `rank` whose `batch_axis` is split over `batch`."""
    import jax
    import numpy as np

    names = tuple(jax_devices_.mesh_shape)
    devices = np.asarray(jax.devices()).reshape(tuple(jax_devices_.mesh_shape.values()))
    mesh = jax.sharding.Mesh(devices, names)
    spec = [None] * rank
    spec[batch_axis] = "batch"
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))
