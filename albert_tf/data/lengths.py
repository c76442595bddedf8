"""Sequence lengths for length-aware batches: real text is short, and a batch padded to its longest member
costs a fraction of one padded to the maximum length. Lengths are rounded up to a small set (multiples of a
`multiple`, and the maximum itself); the attention mask hides padding, so the outputs at the real positions do
not depend on the length chosen.

The rounding depends on the engine (`length_multiple`):

* A TensorFlow graph (the pipelines' `tf.function`, an export's signatures, TF Serving, `Model.predict` on
  TensorFlow without XLA) runs any length without tracing or compiling again: lengths are rounded to
  `LENGTH_MULTIPLE` (8), which wastes a few tokens per batch (8,192 for 96 real sentences of 20-134 pieces in
  batches of 32, against 7,968 at their exact lengths and 10,240 at multiples of 32) and keeps the kernels on
  shapes that fill their vector lanes: an exact odd length (57) measured no faster than the next multiple of 8
  (benchmarks/README.md, "Length buckets").
* An engine that compiles once per shape (XLA's `jit_compile`, JAX's `jit`) rounds to
  `COMPILED_LENGTH_MULTIPLE` (32), so a compiled function is reused across batches instead of compiled again
  for every new length.
"""

import tensorflow as tf

# Any length runs without compiling again (TensorFlow graphs on oneDNN's or Eigen's kernels).
LENGTH_MULTIPLE = 8
# Each new length compiles again (XLA, JAX).
COMPILED_LENGTH_MULTIPLE = 32


def length_multiple(compiles_per_shape):
    """The rounding of batch lengths for an engine: `COMPILED_LENGTH_MULTIPLE` where each new shape compiles
    again (XLA, JAX), else `LENGTH_MULTIPLE`.

    >>> length_multiple(False), length_multiple(True)
    (8, 32)
    """
    return COMPILED_LENGTH_MULTIPLE if compiles_per_shape else LENGTH_MULTIPLE


def padded_length(length, max_length, multiple=LENGTH_MULTIPLE):
    """The length a batch whose longest member has `length` tokens is padded to: `length` rounded up to a
    multiple of `multiple`, at most `max_length` (and at least 1).

    >>> padded_length(20, 512), padded_length(33, 512, 32), padded_length(500, 512, 32), padded_length(0, 128)
    (24, 64, 512, 8)
    """
    if max_length < 1:
        raise ValueError(f"max_length must be positive, got {max_length}")
    rounded = -(-max(int(length), 1) // multiple) * multiple
    return min(rounded, int(max_length))


def bucket_lengths(max_length, multiple=LENGTH_MULTIPLE):
    """Every length `padded_length` can return for `max_length`, in increasing order."""
    return sorted({padded_length(n, max_length, multiple) for n in range(1, int(max_length) + 1)})


def batches_by_length(lengths, batch_size):
    """Indices of `lengths` grouped into batches of similar length (a stable sort by length, cut every
    `batch_size`), so each batch pads little; callers put the results back in input order.

    Returns:
        a list of lists of indices into `lengths`.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def cut_to_longest(features, names, max_length, multiple=LENGTH_MULTIPLE):
    """In a graph: `features` (a dict of int tensors `[..., max_length]` packed from text) with the `names` cut
    along their last axis to the batch's longest real length (`input_mask`) rounded up as `padded_length`
    does; the other features are kept as they are.

    Args:
        features: dict of tensors holding `input_mask` `[..., L]`.
        names: the features with a sequence axis (last) to cut.
        max_length: int, L.
        multiple: int, the rounding.
    """
    mask = features["input_mask"]
    width = tf.shape(mask)[-1]
    used = tf.reduce_any(tf.not_equal(tf.reshape(mask, [-1, width]), 0), axis=0)          # [L]
    longest = tf.reduce_max(tf.where(used, tf.range(1, width + 1), tf.zeros_like(used, tf.int32)))
    rounded = (tf.maximum(longest, 1) + multiple - 1) // multiple * multiple
    length = tf.minimum(rounded, int(max_length))
    return {name: value[..., :length] if name in names else value for name, value in features.items()}
