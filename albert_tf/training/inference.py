"""Inference over a dataset under a `tf.distribute` strategy, as the tasks' evaluation and prediction run it."""

import time

import numpy as np
import tensorflow as tf
from absl import logging


def static_batches(strategy, jit_compile):
    """Whether eval/predict batches must all have one static shape: under a `TPUStrategy` or with XLA."""
    return bool(jit_compile) or isinstance(strategy, tf.distribute.TPUStrategy)


def inference_batches(step, dataset, strategy, what, total=None, unit="examples"):
    """Runs `step` (a `tf.function` of one replica's batch -> dict of tensors) over `dataset` under `strategy`;
    yields one dict of NumPy arrays per global batch, the replicas' parts concatenated in order (each replica
    gets a consecutive slice of the global batch). Logs the progress every 30 s.

    Args:
        step: the per-replica inference function (traced once by the caller, reused per checkpoint).
        dataset: batched `tf.data.Dataset` (global batch size).
        strategy: the `tf.distribute.Strategy` the model was built under.
        what: str, name in the progress log.
        total: int or None, the number of rows to come, for the log's ETA.
        unit: str, what a row is, in the log.
    """
    done = 0
    start = last_log = time.time()
    for features in strategy.experimental_distribute_dataset(dataset):
        out = strategy.run(step, args=(features,))
        arrays = {key: np.concatenate([t.numpy() for t in strategy.experimental_local_results(value)])
                  for key, value in out.items()}
        yield arrays
        done += len(next(iter(arrays.values()))) if arrays else 0
        if time.time() - last_log > 30:
            last_log = time.time()
            rate = done / (last_log - start)
            eta = f", ETA {(total - done) / rate:.0f} s" if total and rate else ""
            logging.info("%s: %d %s (%.1f %s/s%s)", what, done, unit, rate, unit, eta)
