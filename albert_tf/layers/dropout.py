"""Dropout that can be drawn again: a Keras `Dropout`, or its stateless form from a given seed."""

import tensorflow as tf


def dropout(layer, x, training, seed=None):
    """`layer` (a `keras.layers.Dropout`) applied to `x`; with a `seed` (int `[2]` tensor) and `training=True`,
    the same dropout drawn statelessly from that seed instead, so that calling again with the seed (the
    recomputed forward of `AlbertModel(recompute=True)`) draws the same mask."""
    if seed is None or training is not True:
        return layer(x, training=training)
    return tf.nn.experimental.stateless_dropout(x, rate=layer.rate, seed=seed)
