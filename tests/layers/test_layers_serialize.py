"""The layers' configs: each argument given (none at its default) appears in `get_config` with its value,
written here literally, and a layer rebuilt from its serialized form computes what the original computes
with the same weights."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import layers

KERAS_KEYS = {"name", "trainable", "dtype"}

CASES = {
    "embeddings": (
        lambda: layers.AlbertEmbeddings(10, 4, type_vocab_size=3, max_position_embeddings=16,
                                        initializer_range=0.05, dropout_rate=0.1, name="e"),
        {"vocab_size": 10, "embedding_size": 4, "type_vocab_size": 3, "max_position_embeddings": 16,
         "initializer_range": 0.05, "dropout_rate": 0.1},
        lambda rng: ((tf.constant(rng.integers(0, 10, (2, 5)), tf.int32),
                      tf.constant(rng.integers(0, 3, (2, 5)), tf.int32)), {})),
    "attention": (
        lambda: layers.AlbertAttention(8, 2, attention_dropout_rate=0.1, initializer_range=0.05, name="a"),
        {"hidden_size": 8, "num_attention_heads": 2, "attention_dropout_rate": 0.1, "initializer_range": 0.05},
        lambda rng: ((tf.constant(rng.normal(size=(2, 5, 8)), tf.float32),), {})),
    "transformer_block": (
        lambda: layers.AlbertTransformerBlock(8, 2, 12, "relu", hidden_dropout_rate=0.1,
                                              attention_dropout_rate=0.2, initializer_range=0.05, name="t"),
        {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 12, "hidden_act": "relu",
         "hidden_dropout_rate": 0.1, "attention_dropout_rate": 0.2, "initializer_range": 0.05},
        lambda rng: ((tf.constant(rng.normal(size=(2, 5, 8)), tf.float32),), {})),
    "masked_lm_head": (
        lambda: layers.AlbertMaskedLMHead(10, 4, 8, hidden_act="tanh", initializer_range=0.05, name="m"),
        {"vocab_size": 10, "embedding_size": 4, "hidden_size": 8, "hidden_act": "tanh", "initializer_range": 0.05},
        lambda rng: ((tf.constant(rng.normal(size=(2, 5, 8)), tf.float32),
                      tf.constant([[0, 2, 4], [1, 1, 3]], tf.int32),
                      tf.constant(rng.normal(size=(10, 4)), tf.float32)), {})),
    "output_projection": (
        lambda: layers.AlbertOutputProjection(3, 8, initializer_range=0.05, name="o"),
        {"num_outputs": 3, "hidden_size": 8, "initializer_range": 0.05},
        lambda rng: ((tf.constant(rng.normal(size=(2, 8)), tf.float32),), {})),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_holds_every_argument(case):
    make, expected, _ = CASES[case]
    config = make().get_config()
    assert set(config) == set(expected) | KERAS_KEYS
    assert {key: config[key] for key in expected} == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_keeps_the_config_and_the_computation(case):
    make, expected, make_inputs = CASES[case]
    layer = make()
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer)
    assert {key: restored.get_config()[key] for key in expected} == expected
    args, kwargs = make_inputs(np.random.default_rng(0))
    layer(*args, **kwargs)                                   # builds both
    restored(*args, **kwargs)
    # Random weights, so that a config that lost an argument (an activation, a width) shows in the outputs.
    rng = np.random.default_rng(1)
    weights = [rng.normal(scale=0.5, size=w.shape).astype(np.float32) for w in layer.get_weights()]
    layer.set_weights(weights)
    restored.set_weights(weights)
    want, got = layer(*args, **kwargs), restored(*args, **kwargs)
    for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got)):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
