"""Multi-head self-attention with the original's additive `-10000` key mask."""

import math

import keras
import tensorflow as tf

from albert_tf.errors import InputError
from albert_tf.layers import activations
from albert_tf.layers.dropout import dropout
from albert_tf.layers.embeddings import truncated_normal


def dense_2d(layer, x, dtype, activation=None, scale=None):
    """A Keras `Dense`'s kernel and bias applied to a 2-D `[rows, in]` input as `MatMul` + `BiasAdd`.

    The plain 2-D form is what grappler's oneDNN remapper fuses into one `_FusedMatMul` (with `tanh`/`relu`
    and the tanh-approximation `gelu` of `tf.nn.gelu` fused in as well); a 3-D input would become a
    `BatchMatMulV2` that fuses nothing.

    Args:
        layer: a built `keras.layers.Dense` (its own `activation` is not applied).
        x: `[rows, in]` tensor of dtype `dtype`.
        dtype: the compute dtype; the float32 variables are cast to it (mixed precision).
        activation: None, `"gelu"` (tanh approximation), or a callable applied after the bias.
        scale: optional Python float multiplying the output, folded into the float32 kernel and bias (a
            `[in, out]` product instead of one over the `[rows, out]` output).
    """
    kernel, bias = layer.kernel, layer.bias
    if scale is not None:
        kernel, bias = tf.cast(kernel, tf.float32) * scale, tf.cast(bias, tf.float32) * scale
    y = tf.nn.bias_add(tf.matmul(x, tf.cast(kernel, dtype)), tf.cast(bias, dtype))
    if activation is None:
        return y
    if isinstance(activation, str) and activation == "gelu":
        # The same formula as `activations.gelu`, in the op pattern the oneDNN remapper fuses.
        return tf.nn.gelu(y, approximate=True)
    return activation(y)


def attention_bias(input_mask, dtype):
    """`[batch, seq]` 1/0 mask -> additive `[batch, 1, 1, seq]` bias: 0 where attended, -10000 elsewhere."""
    mask = tf.cast(input_mask, dtype)[:, tf.newaxis, tf.newaxis, :]      # [batch, 1, 1, keys]
    return (1.0 - mask) * -10000.0


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertAttention(keras.layers.Layer):
    """`attention_1` of the original (`attention_layer` plus the output dense in the original `modeling.py`).

    Query, key and value kernels are `[H, N*D]` and the output kernel `[N*D, H]`, the shapes of the TF1
    variables, so checkpoints map without reshaping. Logits are scaled by `1/sqrt(D)`, masked on keys only.

    Args:
        hidden_size: int, H.
        num_attention_heads: int, N; H must be divisible by it.
        attention_dropout_rate: float, dropout on the attention probabilities (training only).
        initializer_range: float, truncated-normal stddev of the kernels.
    """

    def __init__(self, hidden_size, num_attention_heads, attention_dropout_rate=0.0, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise InputError("`hidden_size` must be divisible by `num_attention_heads`. Received: "
                             f"`hidden_size={hidden_size}`, `num_attention_heads={num_attention_heads}`.")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.head_size = hidden_size // num_attention_heads

        def dense(name):
            return keras.layers.Dense(hidden_size, kernel_initializer=truncated_normal(initializer_range),
                                      dtype=self.dtype_policy, name=name)

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.dropout = keras.layers.Dropout(attention_dropout_rate, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_size))
        self.built = True

    def call(self, x, attention_bias=None, training=None, dropout_seed=None):
        batch, seq = tf.shape(x)[0], tf.shape(x)[1]
        x2d = tf.reshape(x, [-1, self.hidden_size])                          # [batch*seq, H]
        # `1/sqrt(D)`: in float32, on the logits as the original does (`matmul * scale + mask`, the pattern
        # grappler's oneDNN remapper turns into one `_MklFusedBatchMatMulV2` with the scale and the mask as
        # post-ops, so neither is a pass of its own). In other compute dtypes the logits are cast to float32
        # between the matmul and the mask, which that fusion does not match; there the scale is folded into the
        # query kernel and bias (a power of two for D = 64, so bit-identical there).
        scale = 1.0 / math.sqrt(float(self.head_size))
        logit_scale = scale if self.compute_dtype == "float32" else None
        query_scale = None if logit_scale is not None else scale
        q = self._heads(dense_2d(self.query, x2d, self.compute_dtype, scale=query_scale), batch, seq)  # [b,N,f,D]
        k = self._heads(dense_2d(self.key, x2d, self.compute_dtype), batch, seq)             # [b, N, t, D]
        v = self._heads(dense_2d(self.value, x2d, self.compute_dtype), batch, seq)           # [b, N, t, D]
        context = self._attend(q, k, v, attention_bias, logit_scale, training, dropout_seed)  # [b,N,f,D]
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, self.hidden_size])   # [b*f, H]
        out = dense_2d(self.output_dense, context, self.compute_dtype)      # [batch*from, H]
        return tf.reshape(out, [batch, seq, self.hidden_size])

    def _attend(self, q, k, v, attention_bias, logit_scale, training, dropout_seed):
        """Scaled dot-product attention of `[b, N, seq, D]` heads -> `[b, N, from, D]`; the scale is
        `logit_scale` (a Python float) or, when that is None, already in `q`."""
        logits = tf.matmul(q, k, transpose_b=True)                           # [b, N, from, to]
        if logit_scale is not None:
            logits = logits * logit_scale
        # Softmax (and the -10000 mask) in float32 whatever the compute dtype.
        logits = tf.cast(logits, tf.float32)
        if attention_bias is not None:
            logits += tf.cast(attention_bias, tf.float32)
        if training is True:
            probs = activations.softmax_fused(logits)            # the same softmax, one-pass backward
        else:
            probs = tf.nn.softmax(logits, axis=-1)
        probs = tf.cast(probs, self.compute_dtype)
        if self.attention_dropout_rate > 0:
            probs = tf.cast(dropout(self.dropout, probs, training, dropout_seed), self.compute_dtype)
        return tf.matmul(probs, v)

    def _heads(self, x, batch, seq):
        """`[batch*seq, H]` -> `[batch, N, seq, D]`."""
        x = tf.reshape(x, [batch, seq, self.num_attention_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range)
        return config
