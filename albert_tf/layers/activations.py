"""Activations by their original names (`modeling.get_activation`), in `keras.ops` (every backend), and the
TensorFlow backend's fused training forms of GELU, LayerNorm and softmax."""

import math

import keras
import tensorflow as tf

from albert_tf.errors import InputError


def gelu(x):
    """The original's GELU: the tanh approximation `0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))`."""
    x = keras.ops.convert_to_tensor(x)
    cdf = 0.5 * (1.0 + keras.ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * keras.ops.power(x, 3))))
    return x * cdf


def is_tensorflow():
    """Whether Keras runs on the TensorFlow backend (where the layers use the TensorFlow-only training forms
    below and the stateless dropout of `albert_tf.layers.dropout`)."""
    return keras.backend.backend() == "tensorflow"


def get_activation(name):
    """Maps `gelu`, `relu`, `tanh`, `linear` (or ``""``/None) to a function; callables pass through."""
    if not isinstance(name, str):
        return name
    key = name.lower()
    if key in ("", "linear"):
        return None
    if key == "relu":
        return keras.ops.relu
    if key == "gelu":
        return gelu
    if key == "tanh":
        return keras.ops.tanh
    raise InputError(f"Unsupported activation `{name}`. Expected one of: gelu, relu, tanh, linear.")


# ----------------------------------------------------------------------------------------------------------
# TensorFlow backend only: training-time forms with an analytic backward (`tf.custom_gradient` and XLA
# clusters; the layers use them when `is_tensorflow()`, and the plain `keras.ops` forms, autodiffed by the
# backend, on JAX and PyTorch). Training-time forms with an analytic backward. Autodiff of the composite GELU and LayerNorm makes a dozen
# separate elementwise passes over `[batch*seq, I]` (resp. `[batch*seq, H]`) per layer in the backward pass.
# Each function below is one XLA cluster forward and one backward (only the elementwise work and the row
# reductions; the matmuls around them are not in the cluster), with the analytic gradient. XLA compiles for
# CPU, GPU and TPU alike, so these are the same ops on every device. The math is the original's; the layers use
# them when called with `training=True` (a Python bool), and the plain ops otherwise.

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
    """`tf.nn.softmax` over the last axis with a fused XLA backward, for training."""
    p = tf.nn.softmax(logits, axis=-1)

    def grad(dp):
        return _softmax_backward(dp, p)

    return p, grad
