"""Activations by their original names (`modeling.get_activation`), in `keras.ops` (every backend); the
TensorFlow backend's fused training form of GELU is in `albert_tf.layers.tf_fast_path`."""

import math

import keras

from albert_tf.errors import InputError


def gelu(x):
    """The original's GELU: the tanh approximation `0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))`."""
    x = keras.ops.convert_to_tensor(x)
    cdf = 0.5 * (1.0 + keras.ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * keras.ops.power(x, 3))))
    return x * cdf


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
