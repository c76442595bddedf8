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
  output directory's lock and writes checkpoints, summaries and results.

`JaxDevices` answers what the driver asks of a strategy (`scope()`, `num_replicas_in_sync`, the chief).
"""

import os

import keras
from absl import logging

from albert_tf.errors import InputError

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


def initialize_processes():
    """`keras.distribution.initialize()` once per process when `KERAS_DISTRIBUTION_NUM_PROCESSES` asks for several
    (gloo collectives on the CPU); returns `(process_index, process_count)`."""
    import jax

    count = int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1") or 1)
    if count > 1 and not _initialized:
        # The CPU's cross-process collectives go through gloo (set before any computation; TPUs and GPUs have
        # their own).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        keras.distribution.initialize()
        _initialized["done"] = True
    return jax.process_index(), jax.process_count()


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
