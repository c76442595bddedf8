"""Activations by their original names (`modeling.get_activation`)."""

import contextlib
import math

import tensorflow as tf


def gelu(x):
    """The original's GELU: the tanh approximation `0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))`."""
    x = tf.convert_to_tensor(x)
    cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def get_activation(name):
    """Maps `gelu`, `relu`, `tanh`, `linear` (or ``""``/None) to a function; callables pass through."""
    if not isinstance(name, str):
        return name
    key = name.lower()
    if key in ("", "linear"):
        return None
    if key == "relu":
        return tf.nn.relu
    if key == "gelu":
        return gelu
    if key == "tanh":
        return tf.tanh
    raise ValueError(f"Unsupported activation `{name}`. Expected one of: gelu, relu, tanh, linear.")


# ----------------------------------------------------------------------------------------------------------
# Training-time fused forms. Autodiff of the composite GELU and LayerNorm makes a dozen separate elementwise
# passes over `[batch*seq, I]` (resp. `[batch*seq, H]`) per layer in the backward pass; oneDNN fuses nothing
# there. Each function below is one XLA cluster forward and one backward (XLA only fuses the elementwise work
# and the row reductions; the matmuls around them stay in oneDNN), with the analytic gradient. The math is the
# original's; inference keeps the plain ops, which grappler fuses into the preceding matmul. The encoder uses
# them when called with `training=True` (a Python bool) and this switch is on. Measured on albert-base, batch 8,
# seq 128, 2 cores: float32 training step +6% (GELU) and +6% more (LayerNorm); the softmax backward: +0-3%.
FUSED_TRAINING_OPS = True

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


@tf.function(jit_compile=True, autograph=False)
def _gelu_forward(x):
    t = tf.tanh(_GELU_C * (x + _GELU_A * x * x * x))
    return 0.5 * x * (1.0 + t), t


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward(dy, x, t):
    # d/dx 0.5x(1 + t) = 0.5(1 + t) + 0.5x(1 - t^2) * c(1 + 3a x^2)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_GELU_C * (1.0 + 3.0 * _GELU_A * x * x)))


@tf.custom_gradient
def gelu_fused(x):
    """`gelu` (tanh approximation) with a fused forward and analytic backward, for training."""
    y, t = _gelu_forward(x)

    def grad(dy):
        return _gelu_backward(dy, x, t)

    return y, grad


def _layer_norm(x, gamma, beta, epsilon):
    """The original's two-pass LayerNorm over the last axis: (output, normalized input, 1/std)."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inv = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
    normalized = centered * inv
    return normalized * gamma + beta, normalized, inv


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(x, gamma, beta, epsilon):
    return _layer_norm(x, gamma, beta, epsilon)


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(dy, normalized, inv, gamma):
    reduce_axes = list(range(len(dy.shape) - 1))
    d_gamma = tf.reduce_sum(dy * normalized, axis=reduce_axes)
    d_beta = tf.reduce_sum(dy, axis=reduce_axes)
    d_normalized = dy * gamma
    dx = inv * (d_normalized - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True))
    return dx, d_gamma, d_beta


def layer_norm_fused(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of float32 `x` (`(x - mean) * rsqrt(var + eps) * gamma + beta`), with a
    fused forward and analytic backward, for training. Gradients for `x`, `gamma` and `beta`."""
    epsilon = tf.constant(epsilon, x.dtype)

    @tf.custom_gradient
    def fn(x, gamma, beta):
        y, normalized, inv = _layer_norm_forward(x, gamma, beta, epsilon)

        def grad(dy):
            return _layer_norm_backward(dy, normalized, inv, gamma)

        return y, grad

    return fn(x, gamma, beta)


@tf.function(jit_compile=True, autograph=False)
def _softmax_backward(dp, p):
    return p * (dp - tf.reduce_sum(dp * p, axis=-1, keepdims=True))


@tf.custom_gradient
def softmax_fused(logits):
    """`tf.nn.softmax` over the last axis (oneDNN forward) with a fused XLA backward, for training."""
    p = tf.nn.softmax(logits, axis=-1)

    def grad(dp):
        return _softmax_backward(dp, p)

    return p, grad


# ----------------------------------------------------------------------------------------------------------
# Inference-time fused residual + LayerNorm. Written as TensorFlow ops, `LayerNorm(a + x)` is seven passes over
# the `[batch*seq, H]` activations (the add, two means, the centring, the square, the scale and the shift), about
# 6.7 ms per call for albert-base at batch 8, seq 512 on 2 cores. Two faster forms, chosen at trace time:
#
# * On a CPU with oneDNN (the default x86 build; not inside a `jit_compile` function, and no GPU or TPU in the
#   process): the sum, then the LayerNorm written as the op pattern that grappler's remapper rewrites into oneDNN's
#   `_MklLayerNorm` (what tf_keras's LayerNormalization emits: a `FusedBatchNormV3` in training mode over
#   `[1, rows, H, 1]` NCHW with unit scale and zero offset, then `* gamma + beta`). One pass, ~0.7 ms per call
#   above; the row count goes through a `PlaceholderWithDefault` so that constant folding leaves the pattern's
#   `Fill` ops alone when shapes are static (the remapper matches `Fill`, not a folded `Const`). Paired A/B on the
#   whole encoder against the XLA form below: float32 base seq 512 +2.4%, seq 128 +4.5%; mixed_bfloat16 seq 512
#   +6.8%. Without the rewrite (grappler off) the same ops still compute the same LayerNorm.
# * Elsewhere: one XLA cluster (`jit_compile` functions run on CPU, GPU and TPU alike), 3.8 ms per call above.
#
# Both are the original's two-pass formula to float32 rounding. TF Serving runs no XLA by default and serves on
# GPUs too, so `albert_tf.export` traces with this switch off (see `plain_inference_ops`); trace inside that
# context, or set this to False, before saving a SavedModel some other way for serving.
FUSED_INFERENCE_OPS = True

# Whether `add_layer_norm` may use the oneDNN form where it applies (`onednn_layer_norm_applies`).
ONEDNN_LAYER_NORM = True


def onednn_layer_norm_applies():
    """True when ops traced now go through grappler onto a CPU whose TensorFlow uses oneDNN: a graph (not eager)
    without `jit_compile` (nor a TPU rewrite) in scope, and no GPU or TPU in the process."""
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import control_flow_util
    from tensorflow.python.util import _pywrap_util_port

    if not _pywrap_util_port.IsMklEnabled():       # also False under TF_ENABLE_ONEDNN_OPTS=0
        return False
    if tf.executing_eagerly() or control_flow_util.GraphOrParentsInXlaContext(ops.get_default_graph()):
        return False
    return not tf.config.list_logical_devices("GPU") and not tf.config.list_logical_devices("TPU")


def onednn_layer_norm(y, gamma, beta, epsilon):
    """float32 LayerNorm of `y` over its last axis, `(y - mean) * rsqrt(var + epsilon) * gamma + beta` (biased
    variance), written as the ops that grappler rewrites into oneDNN's `_MklLayerNorm` (see above)."""
    shape = tf.shape(y)
    rows = tf.reduce_prod(shape[:-1])[tf.newaxis]
    rows = tf.raw_ops.PlaceholderWithDefault(input=rows, shape=[1])     # not constant-folded
    stacked = tf.reshape(y, tf.concat([[1], rows, [y.shape[-1], 1]], axis=0))    # [1, rows, H, 1], NCHW
    empty = tf.constant([], tf.float32)
    normalized = tf.raw_ops.FusedBatchNormV3(
        x=stacked, scale=tf.fill(rows, 1.0), offset=tf.fill(rows, 0.0), mean=empty, variance=empty,
        epsilon=epsilon, data_format="NCHW", is_training=True)[0]
    return beta + tf.reshape(normalized, shape) * gamma


def _add_layer_norm(a, x, gamma, beta, epsilon):
    return _layer_norm(tf.cast(a, tf.float32) + tf.cast(x, tf.float32), gamma, beta, epsilon)[0]


@tf.function(jit_compile=True, autograph=False)
def _add_layer_norm_float32(a, x, gamma, beta, epsilon):
    return _add_layer_norm(a, x, gamma, beta, epsilon)


@tf.function(jit_compile=True, autograph=False)
def _add_layer_norm_with_cast(a, x, gamma, beta, epsilon):
    y = _add_layer_norm(a, x, gamma, beta, epsilon)
    return y, tf.cast(y, a.dtype)


@tf.function(jit_compile=True, autograph=False)
def _add_layer_norm_cast(a, x, gamma, beta, epsilon):
    return tf.cast(_add_layer_norm(a, x, gamma, beta, epsilon), a.dtype)


def add_layer_norm(a, x, gamma, beta, epsilon, float32_output=True):
    """`LayerNorm(a + x)` over the last axis, in float32 (inference): oneDNN's LayerNorm where
    `onednn_layer_norm_applies()` (and `ONEDNN_LAYER_NORM`), otherwise one fused XLA pass.

    Args:
        a: the branch output, in the compute dtype.
        x: the residual, float32 or the compute dtype.
        gamma, beta: float32 `[H]`.
        epsilon: Python float.
        float32_output: also return the float32 result (the next residual); otherwise only `a.dtype`'s.

    Returns:
        `(float32 result, the result in a.dtype)`; the first is None when `float32_output` is False and
        `a` is not float32.
    """
    if ONEDNN_LAYER_NORM and onednn_layer_norm_applies():
        y = onednn_layer_norm(tf.cast(a, tf.float32) + tf.cast(x, tf.float32), gamma, beta, epsilon)
        if a.dtype == tf.float32:
            return y, y
        return (y if float32_output else None), tf.cast(y, a.dtype)
    epsilon = tf.constant(epsilon, tf.float32)
    if a.dtype == tf.float32:
        y = _add_layer_norm_float32(a, x, gamma, beta, epsilon)
        return y, y
    if float32_output:
        return _add_layer_norm_with_cast(a, x, gamma, beta, epsilon)
    return None, _add_layer_norm_cast(a, x, gamma, beta, epsilon)


@contextlib.contextmanager
def plain_inference_ops():
    """Within this context, models traced for inference use plain TensorFlow ops (no XLA clusters, no op pattern
    meant for one backend's rewrite), e.g. for a SavedModel that TF Serving or the TFLite converter must run."""
    global FUSED_INFERENCE_OPS
    saved, FUSED_INFERENCE_OPS = FUSED_INFERENCE_OPS, False
    try:
        yield
    finally:
        FUSED_INFERENCE_OPS = saved
