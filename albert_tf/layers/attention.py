"""Multi-head self-attention with the original's additive `-10000` key mask."""

import math

import keras
import tensorflow as tf

from albert_tf.layers.embeddings import truncated_normal


def attention_bias(input_mask, dtype):
    """`[batch, seq]` 1/0 mask -> additive `[batch, 1, 1, seq]` bias: 0 where attended, -10000 elsewhere."""
    mask = tf.cast(input_mask, dtype)[:, tf.newaxis, tf.newaxis, :]      # [batch, 1, 1, keys]
    return (1.0 - mask) * -10000.0


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertAttention(keras.layers.Layer):
    """`attention_1` of the original (original-release §3.5), output projection included.

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
            raise ValueError("`hidden_size` must be divisible by `num_attention_heads`. Received: "
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
        self.dropout = keras.layers.Dropout(attention_dropout_rate, name="dropout")

    def build(self, input_shape=None):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_size))
        self.built = True

    def _split_heads(self, x):
        batch, seq = tf.shape(x)[0], tf.shape(x)[1]
        return tf.reshape(x, [batch, seq, self.num_attention_heads, self.head_size])  # [batch, seq, N, D]

    def call(self, x, attention_bias=None, training=None):
        q = self._split_heads(self.query(x))                                 # [batch, from, N, D]
        k = self._split_heads(self.key(x))                                   # [batch, to, N, D]
        v = self._split_heads(self.value(x))                                 # [batch, to, N, D]
        logits = tf.einsum("bfnd,btnd->bnft", q, k)                          # [batch, N, from, to]
        logits = logits * tf.cast(1.0 / math.sqrt(float(self.head_size)), logits.dtype)
        if attention_bias is not None:
            logits += tf.cast(attention_bias, logits.dtype)
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        probs = self.dropout(tf.cast(probs, self.compute_dtype), training=training)
        context = tf.einsum("bnft,btnd->bfnd", probs, v)                     # [batch, from, N, D]
        batch, seq = tf.shape(x)[0], tf.shape(x)[1]
        context = tf.reshape(context, [batch, seq, self.hidden_size])       # [batch, from, H]
        return self.output_dense(context)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range)
        return config
