"""Activations by their original names (`modeling.get_activation`)."""

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
