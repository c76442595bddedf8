"""`tf.distribute` strategies and mixed precision from the runners' flags.

The original used `TPUEstimator` (one device, or a TPU via `--use_tpu --tpu_name`); here the same flags
select a `TPUStrategy`, and `--strategy` adds one device, all local GPUs (or logical CPUs) and multi-worker
training configured by `TF_CONFIG`.
"""

import json
import os

import keras
import tensorflow as tf
from absl import logging

from albert_tf.errors import InputError
# The choices of `--strategy` and `--mixed_precision` are declared with their options (a module that imports
# no TensorFlow).
from albert_tf.options import MIXED_PRECISION_POLICIES, STRATEGIES  # noqa: F401


def get_strategy(strategy="one_device", use_tpu=False, tpu_name=None, tpu_zone=None, gcp_project=None,
                 master=None, num_tpu_cores=None):
    """Returns a `tf.distribute.Strategy`.

    Args:
        strategy: `"one_device"` (first GPU, else the CPU), `"mirrored"` (all local GPUs, else all logical
            CPUs), `"multi_worker"` (`MultiWorkerMirroredStrategy` from `TF_CONFIG`) or `"tpu"`.
        use_tpu: bool, the original flag; True selects `"tpu"` whatever `strategy` says.
        tpu_name, tpu_zone, gcp_project: `TPUClusterResolver` arguments, as the original.
        master: TPU master address (`grpc://...`), used when `tpu_name` is not given.
        num_tpu_cores: int or None; when given, checked against the TPU's replica count.
    """
    if use_tpu:
        strategy = "tpu"
    if strategy not in STRATEGIES:
        raise InputError(f"`strategy` must be one of {STRATEGIES}. Received: strategy={strategy!r}.")
    if strategy == "tpu":
        result = tpu_strategy(tpu_name, tpu_zone, gcp_project, master)
        if num_tpu_cores and result.num_replicas_in_sync != num_tpu_cores:
            logging.warning("`num_tpu_cores=%d` but the TPU has %d cores; using all of them.", num_tpu_cores,
                            result.num_replicas_in_sync)
    elif strategy == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            logging.warning("`strategy=multi_worker` without TF_CONFIG: training on this host only.")
        result = tf.distribute.MultiWorkerMirroredStrategy()
    elif strategy == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        result = tf.distribute.MirroredStrategy(devices=devices)
    else:
        gpus = tf.config.list_logical_devices("GPU")
        result = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    logging.info("Strategy %s with %d replica(s).", type(result).__name__, result.num_replicas_in_sync)
    return result


def tpu_strategy(tpu_name=None, tpu_zone=None, gcp_project=None, master=None):
    """A `TPUStrategy` on the TPU that `tpu_name` (`local` on a TPU VM), `master` or `TPU_NAME` names.

    Raises:
        InputError: naming the missing TPU when none is reachable (no name given, a name that does not
            resolve, or a machine without TPU devices): what the TPU initialisation and the
            `iterations_per_loop` host loop need cannot run elsewhere.
    """
    tpu = tpu_name or master or ""
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu, zone=tpu_zone, project=gcp_project)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, OSError, ImportError, tf.errors.OpError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        where = f"`tpu_name`/`master` {tpu!r}" if tpu else "no `tpu_name`, `master` or TPU_NAME"
        raise InputError(f"`strategy=tpu` (or `use_tpu`) needs a TPU, and none was found ({where}: {detail}). "
                         "On a TPU VM pass `tpu_name=local`; on a GPU or the CPU use `strategy=one_device` or "
                         "`mirrored`.") from error


def set_mixed_precision(policy):
    """Sets the Keras global dtype policy: `"float32"`, `"mixed_bfloat16"` or `"mixed_float16"` (None = float32).

    Call it before building the model. `optimization.create_optimizer` adds dynamic loss scaling under
    `mixed_float16`.
    """
    policy = policy or "float32"
    if policy not in MIXED_PRECISION_POLICIES:
        raise InputError(f"`mixed_precision` must be one of {MIXED_PRECISION_POLICIES}. "
                         f"Received: mixed_precision={policy!r}.")
    keras.mixed_precision.set_dtype_policy(policy)
    return keras.mixed_precision.global_policy()


def worker_info(strategy):
    """`(task_type, task_id, is_chief)` of this process (chief: `chief` or `worker` 0 without a chief)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None)
    task_id = getattr(resolver, "task_id", None) or 0
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or task_type is None:
        return task_type, task_id, True
    cluster = resolver.cluster_spec().as_dict()
    if "chief" in cluster:
        is_chief = task_type == "chief"
    else:
        is_chief = task_type == "worker" and task_id == 0
    return task_type, task_id, is_chief


def tf_config_for_local_workers(ports, index):
    """A `TF_CONFIG` JSON string for `len(ports)` workers on 127.0.0.1 (tests and single-host trials)."""
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})
