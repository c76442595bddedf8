"""Inference over a dataset, as the tasks' evaluation and prediction run it, on every Keras backend.

A task writes its step once, as `fn(features) -> {name: tensor}` over `model(...)` and `keras.ops`
(`make_step`); the step runs

* on TensorFlow as a `tf.function` (XLA with `jit_compile`) under the run's `tf.distribute` strategy, each
  replica a consecutive slice of the global batch (as the runners always did);
* on JAX as one `jax.jit` of the function with the model's variables as arguments (Keras' stateless scope:
  the weights restored between calls are the ones used), on the `tf.data` batches as NumPy arrays, compiled
  once per input shape; under a `keras.distribution` the batch is laid out as it says.

Length-aware batches (`token_keys`): real text is short, so each batch runs at its longest real length (the
last attended position of `input_mask`), rounded up by `albert_tf.data.lengths.padded_length` (to a multiple of
32 where each new length compiles again: JAX, XLA; of 8 in a TensorFlow graph), instead of the
full `max_seq_length`; the attention mask hides padding, so the outputs at the real positions do not depend on
it. Per-token outputs (`token_outputs`) are padded back with zeros to the full length, so the callers see the
shapes of a full-length run.
"""

import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.data.lengths import length_multiple, padded_length

# The features whose last axis is the sequence (sliced to the batch's length): the encoder's inputs and SQuAD's
# answer-position mask.
TOKEN_FEATURES = ("input_ids", "input_mask", "segment_ids", "p_mask")


def static_batches(strategy, jit_compile):
    """Whether eval/predict batches must all have one static shape: under a `TPUStrategy` or with XLA."""
    return bool(jit_compile) or isinstance(strategy, tf.distribute.TPUStrategy)


class InferenceStep:
    """`fn(features) -> {name: tensor}` compiled for the backend: `step(features)` takes a batch (TensorFlow
    tensors or NumPy arrays) and returns the outputs (tensors on TensorFlow, arrays on JAX).

    Attributes:
        traces: int, how many times `fn` was traced (one per input shape on JAX).
        token_keys: the features sliced to each batch's longest real length (empty: full length).
        token_outputs: the outputs padded back to the full length along their axis 1.
    """

    def __init__(self, model, fn, jit_compile=False, token_keys=(), token_outputs=()):
        self.model = model
        self.fn = fn
        self.traces = 0
        self.token_keys = tuple(token_keys)
        self.token_outputs = tuple(token_outputs)
        self.backend = keras.backend.backend()
        # Whether each new input length compiles again (JAX's jit, XLA), which rounds lengths coarser.
        self.compiles_per_shape = self.backend == "jax" or (self.backend == "tensorflow" and bool(jit_compile))
        if self.backend == "tensorflow":
            self._call = tf.function(self._traced, jit_compile=bool(jit_compile), reduce_retracing=True)
        elif self.backend == "jax":
            import jax   # only on the JAX backend

            self._jitted = jax.jit(self._stateless)
            self._call = self._jax_call
        else:
            self._call = self._traced

    def _traced(self, features):
        self.traces += 1
        return self.fn(features)

    def _stateless(self, values, features):
        self.traces += 1
        with keras.StatelessScope(state_mapping=list(zip(self.model.variables, values))):
            outputs = self.fn(features)
        return {key: keras.ops.convert_to_tensor(value) for key, value in outputs.items()}

    def _jax_call(self, features):
        values = [variable.value for variable in self.model.variables]
        return self._jitted(values, _laid_out(features))

    def __call__(self, features):
        return self._call(features)


def make_step(model, fn, jit_compile=False, token_keys=(), token_outputs=()):
    """The `InferenceStep` of `fn` over `model` (traced once per shape, reused for every checkpoint restored
    into `model`)."""
    return InferenceStep(model, fn, jit_compile, token_keys, token_outputs)


def _laid_out(features):
    """`features` (NumPy) placed as the current `keras.distribution` lays out a batch (split over its data axis
    when the batch divides evenly); as they are without a distribution."""
    distribution = keras.distribution.distribution()
    if distribution is None:
        return features
    placed = {}
    for key, value in features.items():
        layout = distribution.get_data_layout(value.shape)
        axis_size = _data_axis_size(distribution)
        placed[key] = (keras.distribution.distribute_tensor(value, layout)
                       if value.ndim and value.shape[0] % axis_size == 0 else value)
    return placed


def _data_axis_size(distribution):
    mesh = distribution.device_mesh
    name = getattr(distribution, "batch_dim_name", None) or mesh.axis_names[0]
    return int(mesh.shape[mesh.axis_names.index(name)])


def length_sliced(dataset, token_keys, max_length, multiple):
    """`dataset` with each batch's `token_keys` cut to `padded_length(its longest real length, max_length,
    multiple)` along the last axis (the batch's length, read from `input_mask`); the same dataset when
    `token_keys` is empty."""
    if not token_keys:
        return dataset
    # padded_length of every real length 0..max_length, looked up in the graph.
    table = tf.constant([padded_length(n, max_length, multiple) for n in range(max_length + 1)], tf.int32)

    def cut(features):
        mask = tf.reshape(tf.cast(features["input_mask"], tf.int32), [-1, tf.shape(features["input_mask"])[-1]])
        attended = tf.reduce_any(mask > 0, axis=0)
        positions = tf.range(1, tf.shape(attended)[0] + 1)
        length = tf.gather(table, tf.reduce_max(tf.where(attended, positions, 0)))
        return {key: (value[..., :length] if key in token_keys else value) for key, value in features.items()}

    return dataset.map(cut)


def _pad_back(arrays, token_outputs, max_length):
    """The per-token outputs padded with zeros to `max_length` along axis 1."""
    for key in token_outputs:
        value = arrays[key]
        if value.ndim > 1 and value.shape[1] < max_length:
            widths = [(0, 0)] * value.ndim
            widths[1] = (0, max_length - value.shape[1])
            arrays[key] = np.pad(value, widths)
    return arrays


def _host_batches(step, dataset, strategy):
    """The global batches' outputs as dicts of NumPy arrays: `strategy.run` on TensorFlow, the jitted step on
    the NumPy batches elsewhere."""
    if step.backend != "tensorflow":
        for features in dataset.as_numpy_iterator():
            yield {key: np.asarray(value) for key, value in step(features).items()}
        return
    for features in strategy.experimental_distribute_dataset(dataset):
        out = strategy.run(step, args=(features,))
        yield {key: np.concatenate([t.numpy() for t in strategy.experimental_local_results(value)])
               for key, value in out.items()}


def inference_batches(step, dataset, strategy, what, total=None, unit="examples", max_length=None):
    """Runs `step` (an `InferenceStep`) over `dataset`; yields one dict of NumPy arrays per global batch, the
    replicas' parts concatenated in order (each replica gets a consecutive slice of the global batch). Logs the
    progress every 30 s.

    Args:
        step: the `InferenceStep` (made once by the caller, reused per checkpoint).
        dataset: batched `tf.data.Dataset` (global batch size) of full-length features.
        strategy: the `tf.distribute.Strategy` the model was built under (TensorFlow backend).
        what: str, name in the progress log.
        total: int or None, the number of rows to come, for the log's ETA.
        unit: str, what a row is, in the log.
        max_length: int, the features' full length: each batch runs at its own length when `step` has
            `token_keys` (not under a `TPUStrategy`), and its `token_outputs` come back at this length. None:
            full length.
    """
    done = 0
    start = last_log = time.time()
    # A `TPUStrategy`'s distributed input keeps static shapes: every batch at the full length there.
    if max_length and step.token_keys and not isinstance(strategy, tf.distribute.TPUStrategy):
        dataset = length_sliced(dataset, step.token_keys, int(max_length),
                                length_multiple(step.compiles_per_shape))
    for arrays in _host_batches(step, dataset, strategy):
        if max_length:
            arrays = _pad_back(arrays, step.token_outputs, int(max_length))
        yield arrays
        done += len(next(iter(arrays.values()))) if arrays else 0
        if time.time() - last_log > 30:
            last_log = time.time()
            rate = done / (last_log - start)
            eta = f", ETA {(total - done) / rate:.0f} s" if total and rate else ""
            logging.info("%s: %d %s (%.1f %s/s%s)", what, done, unit, rate, unit, eta)
