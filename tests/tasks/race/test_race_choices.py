"""`AlbertRace` on other numbers of choices than RACE's 4: the original's loss (NumPy) and `fit` on 2 and 5."""

import keras
import numpy as np
import pytest

from albert_tf.config import AlbertConfig
from albert_tf.tasks.race.model import AlbertRace, race_loss

CONFIG = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)


def _numpy_loss(logits, labels):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    per_example = -log_probs[np.arange(len(labels)), labels]
    return per_example.mean(), per_example


@pytest.mark.parametrize("choices", [2, 3, 5])
def test_the_loss_is_the_originals_for_any_number_of_choices(choices):
    rng = np.random.default_rng(choices)
    logits = rng.normal(size=(6, choices)).astype(np.float32) * 3
    labels = rng.integers(0, choices, size=6)
    loss, per_example = race_loss(logits, labels)
    expected_loss, expected = _numpy_loss(logits, labels)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(per_example), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss)), expected_loss, rtol=1e-6)


@pytest.mark.parametrize("choices", [2, 5])
def test_fit_learns_which_choice_is_marked(choices):
    """The right choice carries token 3 at its first position: `fit` learns it on `choices` choices."""
    keras.utils.set_random_seed(choices)
    rng = np.random.default_rng(choices)
    n, seq = 64, 8
    ids = rng.integers(5, CONFIG.vocab_size, size=(n, choices, seq)).astype(np.int32)
    labels = rng.integers(0, choices, size=n).astype(np.int32)
    ids[np.arange(n), labels, 0] = 3
    inputs = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    model = AlbertRace(CONFIG, dropout_prob=0.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    before = model.evaluate(inputs, labels, batch_size=16, verbose=0, return_dict=True)
    model.fit(inputs, labels, batch_size=16, epochs=12, verbose=0)
    after = model.evaluate(inputs, labels, batch_size=16, verbose=0, return_dict=True)
    assert model(inputs, training=False)["logits"].shape == (n, choices)
    assert after["loss"] < before["loss"] * 0.5, (before, after)
    assert after["accuracy"] >= 0.9, after
