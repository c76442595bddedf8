"""Multi-head self-attention with the original's additive `-10000` key mask."""

import math

import keras

from albert_tf.errors import InputError
from albert_tf.layers import tf_fast_path
from albert_tf.layers.base import ConfigLayer
from albert_tf.layers.embeddings import truncated_normal


def dense_2d(x, kernel, bias, activation=None):
    """`activation(x @ kernel + bias)` on a 2-D `[rows, in]` input (`keras.ops`).

    On the TensorFlow backend the plain 2-D form is what grappler's oneDNN remapper fuses into one
    `_FusedMatMul` (with `tanh`/`relu` and the tanh-approximation GELU fused in as well); a 3-D input would
    become a `BatchMatMulV2` that fuses nothing.

    Args:
        x: `[rows, in]` tensor.
        kernel: `[in, out]` and bias `[out]`, in `x`'s dtype (a block's `prepare_weights()`).
        activation: None, `"gelu"` (tanh approximation), or a callable applied after the bias.
    """
    return activate(keras.ops.add(keras.ops.matmul(x, kernel), bias), activation)


def activate(y, activation):
    """`activation(y)`: None is the identity, `"gelu"` the backend's own tanh-approximation GELU op (the formula
    of `activations.gelu`), a callable is called."""
    if activation is None:
        return y
    if isinstance(activation, str) and activation == "gelu":
        return keras.ops.gelu(y, approximate=True)
    return activation(y)


def dense(layer, x, weights, name, activation=None):
    """`layer` (a built `keras.layers.Dense` without activation) on 2-D `x`, then `activation`: with the
    prepared `weights[name + "_kernel"]` and `[name + "_bias"]` (`prepare_dense`) by `dense_2d`, or, where
    `prepare_dense` left them out (a quantized layer), by calling the layer: Keras' own int8 matmul."""
    kernel = weights.get(f"{name}_kernel")
    if kernel is None:
        return activate(layer(x), activation)
    return dense_2d(x, kernel, weights[f"{name}_bias"], activation)


def prepare_dense(weights, name, layer, dtype, scale=None):
    """Adds `layer`'s kernel and bias, cast to `dtype`, to `weights` as `name + "_kernel"`, `name + "_bias"`:
    the public `Dense.kernel` (which adds Keras' LoRA adapter in), times `scale` in float32 before the cast when
    given. A quantized layer (`quantize("int8")`) adds nothing: `dense` calls it."""
    if layer.quantization_mode is not None:
        return weights
    kernel, bias = layer.kernel, layer.bias
    if scale is not None:
        kernel, bias = keras.ops.cast(kernel, "float32") * scale, keras.ops.cast(bias, "float32") * scale
    weights[f"{name}_kernel"], weights[f"{name}_bias"] = keras.ops.cast(kernel, dtype), keras.ops.cast(bias, dtype)
    return weights


def attention_bias(input_mask, dtype):
    """`[batch, seq]` 1/0 mask -> additive `[batch, 1, 1, seq]` bias: 0 where attended, -10000 elsewhere."""
    # expand_dims, not `[:, None, None, :]`: LiteRT has no kernel for a strided slice that adds axes, which a
    # signature of unknown batch and length keeps (`albert_tf.export.lite`, resizable inputs).
    mask = keras.ops.expand_dims(keras.ops.expand_dims(keras.ops.cast(input_mask, dtype), 1), 1)  # [batch, 1, 1, keys]
    return (1.0 - mask) * -10000.0


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertAttention(ConfigLayer):
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
        self.keep_arguments(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                            attention_dropout_rate=attention_dropout_rate, initializer_range=initializer_range)
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

    def prepare_weights(self):
        """This forward's dense weights in the compute dtype, made once per forward however often the block is
        applied (`prepare_dense`).

        Returns a dict of `query_kernel`, `key_kernel`, `value_kernel`, `output_kernel` (`[H, H]`) and the four
        biases (`query_bias`, ... `[H]`), less those of quantized layers (called as they are). In compute dtypes
        other than float32, `1/sqrt(D)` is folded into the query kernel and bias in float32 before the cast
        (see `call`).
        """
        dtype = self.compute_dtype
        scale = 1.0 / math.sqrt(float(self.head_size)) if dtype != "float32" else None
        weights = {}
        for name, layer in (("query", self.query), ("key", self.key), ("value", self.value),
                            ("output", self.output_dense)):
            prepare_dense(weights, name, layer, dtype, scale if name == "query" else None)
        return weights

    def call(self, x, attention_bias=None, training=None, dropout_seed=None, prepared=None):
        """`x` `[batch, seq, H]` -> `[batch, seq, H]`.

        `prepared`: optional dict from `prepare_weights()` (the encoder makes it once per forward for every
        application of the shared block); made here when None.
        """
        ops = keras.ops
        weights = self.prepare_weights() if prepared is None else prepared
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        x2d = ops.reshape(x, [-1, self.hidden_size])                          # [batch*seq, H]
        # `1/sqrt(D)`: in float32, on the logits as the original does (`matmul * scale + mask`, the pattern
        # grappler's oneDNN remapper turns into one `_MklFusedBatchMatMulV2` with the scale and the mask as
        # post-ops, so neither is a pass of its own). In other compute dtypes the logits are cast to float32
        # between the matmul and the mask, which that fusion does not match; there the scale is already in the
        # query kernel and bias (a power of two for D = 64, so bit-identical there).
        logit_scale = 1.0 / math.sqrt(float(self.head_size)) if self.compute_dtype == "float32" else None
        # Query, key and value stay three `[H, H]` matmuls: one `[H, 3H]` matmul and a split measured no faster
        # on CPU under either oneDNN setting (benchmarks/README.md, "Q/K/V in one matmul").
        q, k, v = (self._heads(dense(layer, x2d, weights, name), batch, seq, keys=name == "key")
                   for name, layer in (("query", self.query), ("key", self.key), ("value", self.value)))
        if logit_scale is None and "query_kernel" not in weights:
            q = q * ops.cast(1.0 / math.sqrt(float(self.head_size)), q.dtype)   # a quantized query: not folded
        context = self._attend(q, k, v, attention_bias, logit_scale, training, dropout_seed)  # [b,N,f,D]
        context = ops.reshape(ops.transpose(context, [0, 2, 1, 3]), [-1, self.hidden_size])  # [b*f, H]
        out = dense(self.output_dense, context, weights, "output")                          # [b*f, H]
        return ops.reshape(out, [batch, seq, self.hidden_size])

    def _attend(self, q, k, v, attention_bias, logit_scale, training, dropout_seed):
        """Scaled dot-product attention of `[b, N, seq, D]` heads -> `[b, N, from, D]`; the scale is
        `logit_scale` (a Python float) or, when that is None, already in `q`."""
        ops = keras.ops
        logits = ops.matmul(q, k)              # k is [b, N, D, to] (`_heads`): [b, N, from, to], no transpose

        if logit_scale is not None:
            logits = logits * logit_scale
        # Softmax (and the -10000 mask) in float32 whatever the compute dtype.
        logits = ops.cast(logits, "float32")
        if attention_bias is not None:
            logits = logits + ops.cast(attention_bias, "float32")
        fused_softmax = tf_fast_path.training_form("softmax", training)     # the same softmax, fused backward
        probs = ops.softmax(logits, axis=-1) if fused_softmax is None else fused_softmax(logits)
        probs = ops.cast(probs, self.compute_dtype)
        if self.attention_dropout_rate > 0:
            probs = ops.cast(tf_fast_path.dropout(self.dropout, probs, training, dropout_seed), self.compute_dtype)
        return ops.matmul(probs, v)

    def _heads(self, x, batch, seq, keys=False):
        """`[batch*seq, H]` -> `[batch, N, seq, D]`, or with `keys` `[batch, N, D, seq]` (the scores' right-hand
        side as it is multiplied, so that it takes one transpose here and none at the matmul)."""
        x = keras.ops.reshape(x, [batch, seq, self.num_attention_heads, self.head_size])
        return keras.ops.transpose(x, [0, 2, 3, 1] if keys else [0, 2, 1, 3])
