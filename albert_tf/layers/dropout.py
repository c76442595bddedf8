"""Dropout that can be drawn again: a Keras `Dropout`, or (TensorFlow backend) its stateless form from a seed."""

import tensorflow as tf

from albert_tf.layers.activations import is_tensorflow


def dropout(layer, x, training, seed=None):
    """`layer` (a `keras.layers.Dropout`) applied to `x`; with a `seed` (int `[2]` tensor) and `training=True`,
    the same dropout drawn statelessly from that seed instead, so that calling again with the seed (the
    recomputed forward of `AlbertModel(recompute=True)`) draws the same mask.

    The seeded form is TensorFlow's `stateless_dropout` and is used on the TensorFlow backend only (the
    encoder makes no seeds on the others, where Keras' `Dropout` draws from its seed generator)."""
    if seed is None or training is not True or not is_tensorflow():
        return layer(x, training=training)
    return tf.nn.experimental.stateless_dropout(x, rate=layer.rate, seed=seed)


def fold_in(seed, index):
    """`seed` (int `[2]` tensor or None) folded with `index` (TensorFlow's stateless fold-in), None for None."""
    if seed is None:
        return None
    return tf.random.experimental.stateless_fold_in(seed, index)
