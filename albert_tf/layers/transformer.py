"""The post-LN transformer block of the original (`attention_ffn_block`)."""

import keras

from albert_tf.layers import tf_fast_path
from albert_tf.layers.activations import gelu, get_activation
from albert_tf.layers.attention import AlbertAttention, dense, prepare_dense
from albert_tf.layers.base import ConfigLayer
from albert_tf.layers.embeddings import truncated_normal


def layer_norm(layer, x, training=None):
    """A float32 `keras.layers.LayerNormalization`'s gamma/beta applied to float32 `x` over the last axis.

    The original's two-pass LayerNorm (`layer_norm` in the original `modeling.py`), written as
    `x * inv + (beta - mean * inv)` with `inv = gamma * rsqrt(var + eps)` (the form of
    `batch_normalization`), which touches the `[rows, H]` tensor the fewest times. With `training=True` on the
    TensorFlow backend, the same normalisation with a fused forward and an analytic backward
    (`tf_fast_path.training_form("layer_norm")`).
    """
    ops = keras.ops
    gamma, beta = ops.cast(layer.gamma, "float32"), ops.cast(layer.beta, "float32")
    fused = tf_fast_path.training_form("layer_norm", training)
    if fused is not None:
        return fused(x, gamma, beta, layer.epsilon)
    mean, variance = ops.moments(x, axes=[-1], keepdims=True)
    inv = ops.rsqrt(variance + layer.epsilon) * gamma
    return x * inv + (beta - mean * inv)


def residual_layer_norm(layer, a, x, compute_dtype, training=None):
    """`layer` (a float32 LayerNormalization) applied to `a + x`, summed in float32.

    Returns:
        `(float32 result, the result in compute_dtype)`.
    """
    y = layer_norm(layer, keras.ops.cast(a, "float32") + keras.ops.cast(x, "float32"), training)
    return y, keras.ops.cast(y, compute_dtype)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTransformerBlock(ConfigLayer):
    """One `group_g/inner_group_k` block (`attention_ffn_block` in the original `modeling.py`)::

        a   = dropout(attention(x))
        x1  = LayerNorm(a + x)
        f   = dropout(act(x1 W_i + b_i) W_o + b_o)
        out = LayerNorm_1(f + x1)

    Args:
        hidden_size: int, H.
        num_attention_heads: int, N.
        intermediate_size: int, FFN width.
        hidden_act: str, `gelu` (tanh approximation), `relu`, `tanh` or `linear`.
        hidden_dropout_rate: float, dropout on the attention output and FFN output (training only).
        attention_dropout_rate: float, dropout on attention probabilities (training only).
        initializer_range: float, truncated-normal stddev.
    """

    def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
                 hidden_dropout_rate=0.0, attention_dropout_rate=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                            intermediate_size=intermediate_size, hidden_act=hidden_act,
                            hidden_dropout_rate=hidden_dropout_rate, attention_dropout_rate=attention_dropout_rate,
                            initializer_range=initializer_range)
        self.activation = get_activation(hidden_act)
        init = truncated_normal(initializer_range)

        self.attention = AlbertAttention(hidden_size, num_attention_heads, attention_dropout_rate,
                                         initializer_range, dtype=self.dtype_policy, name="attention")
        self.attention_dropout = keras.layers.Dropout(hidden_dropout_rate, dtype=self.dtype_policy,
                                                      name="attention_output_dropout")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype="float32", name="LayerNorm")
        self.ffn = keras.layers.Dense(intermediate_size, kernel_initializer=init, dtype=self.dtype_policy,
                                      name="ffn")
        self.ffn_output = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy,
                                             name="ffn_output")
        self.ffn_dropout = keras.layers.Dropout(hidden_dropout_rate, dtype=self.dtype_policy,
                                                name="ffn_output_dropout")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype="float32", name="LayerNorm_1")

    def build(self, input_shape=None):
        self.attention.build()
        self.attention_layer_norm.build((None, None, self.hidden_size))
        self.ffn.build((None, None, self.hidden_size))
        self.ffn_output.build((None, None, self.intermediate_size))
        self.output_layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def prepare_weights(self):
        """The block's dense weights in the compute dtype for one forward (`AlbertAttention.prepare_weights`, and
        `ffn_kernel`, `ffn_bias`, `ffn_output_kernel`, `ffn_output_bias`).

        ALBERT applies one block many times; `AlbertModel` calls this once per forward and hands the result to
        every application, so the casts (mixed precision) and the query scale run once per forward, not once
        per layer. The LayerNorm weights are read where they are used (float32 always).
        """
        dtype = self.compute_dtype
        weights = self.attention.prepare_weights()
        for name, layer in (("ffn", self.ffn), ("ffn_output", self.ffn_output)):
            prepare_dense(weights, name, layer, dtype)
        return weights

    def call(self, x, attention_bias=None, training=None, dropout_seed=None, prepared=None):
        """`x` `[batch, seq, H]` -> `[batch, seq, H]` in the compute dtype.

        `dropout_seed`: optional int `[2]` tensor; with `training=True` the block's three dropouts are drawn
        statelessly from it (see `tf_fast_path.dropout`), otherwise by the Keras `Dropout` layers.
        `prepared`: optional dict from `prepare_weights()`, made here when None.
        """
        ops = keras.ops
        weights = self.prepare_weights() if prepared is None else prepared
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        seeds = [tf_fast_path.fold_in(dropout_seed, i) for i in range(3)]
        a = self.attention(x, attention_bias, training=training, dropout_seed=seeds[0],
                           prepared=weights)                                              # [batch, seq, H]
        if self.hidden_dropout_rate > 0:
            a = tf_fast_path.dropout(self.attention_dropout, a, training, seeds[1])
        x1, x1c = residual_layer_norm(self.attention_layer_norm, ops.reshape(a, [-1, self.hidden_size]),
                                      ops.reshape(x, [-1, self.hidden_size]), self.compute_dtype, training)
        # x1: float32 [batch*seq, H] (the next residual); x1c: the same in the compute dtype.
        activation = self.activation
        if activation is gelu:
            # Training on TensorFlow: one fused XLA pass each way; otherwise the backend's tanh-approximation
            # GELU (`keras.ops.gelu(approximate=True)`), the same formula.
            activation = tf_fast_path.training_form("gelu", training) or "gelu"
        h = dense(self.ffn, x1c, weights, "ffn", activation)                                 # [batch*seq, I]
        f = dense(self.ffn_output, h, weights, "ffn_output")                                 # [batch*seq, H]
        if self.hidden_dropout_rate > 0:
            f = tf_fast_path.dropout(self.ffn_dropout, f, training, seeds[2])
        _, out = residual_layer_norm(self.output_layer_norm, f, x1, self.compute_dtype, training)
        return ops.reshape(out, [batch, seq, self.hidden_size])
