"""`albert_tf.training.loop` in this process (KERAS_BACKEND=jax, the devices it has) on a tiny classifier with
dropout off: gradient accumulation of 2 micro-batches equals one batch of both; SIGTERM during training saves the
step reached and raises `Interrupted`, and the same call resumes (the input position from the checkpoint) to the
uninterrupted run's weights; the `mixed_bfloat16` and `mixed_float16` (loss scaling) policies train; the step compiles once per run.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]

CONFIG = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              num_hidden_groups=1, inner_group_num=1, hidden_act="gelu",
              intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, type_vocab_size=2)
BATCH, STEPS = 8, 6


def _features():
    rng = np.random.RandomState(0)
    return {"input_ids": rng.randint(5, 50, size=(64, 16)).astype(np.int32),
            "input_mask": np.ones((64, 16), np.int32), "segment_ids": np.zeros((64, 16), np.int32),
            "label_ids": rng.randint(0, 2, size=(64,)).astype(np.int32)}


def _loss(model, features, training):
    from albert_tf.tasks.glue.model import classifier_loss

    outputs = model(features, training=training)
    return keras.ops.mean(classifier_loss(outputs, features["label_ids"], 2)), {}


def _train(model_dir, accumulation=1, callback=None):
    import albert_tf
    from albert_tf.training import jax_distribution, loop, optimization

    keras.utils.set_random_seed(1)
    devices = jax_distribution.jax_devices()
    with devices.scope():
        model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(CONFIG), num_labels=2, dropout_rate=0.0)
        optimizer = optimization.create_optimizer(1e-2, STEPS, 1, optimizer="adamw")
    features = _features()

    def dataset_fn(input_context, start_batch):
        del input_context
        dataset = tf.data.Dataset.from_tensor_slices(features).repeat().batch(BATCH // accumulation)
        return dataset.skip(start_batch)

    result = loop.run_training(model, optimizer, _loss, dataset_fn, devices, str(model_dir), STEPS,
                                   iterations_per_loop=2, save_checkpoints_steps=4, keep_checkpoint_max=3,
                                   gradient_accumulation_steps=accumulation, positional_input=True,
                                   loop_callback=callback)
    return result, [np.asarray(v.numpy()) for v in model.weights]


def _assert_close(a, b, tolerance):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=0, atol=tolerance)


def test_accumulation_equals_one_batch(tmp_path):
    one, weights_one = _train(tmp_path / "one")
    two, weights_two = _train(tmp_path / "two", accumulation=2)
    assert one["global_step"] == two["global_step"] == STEPS
    assert one["compilations"] == two["compilations"] == 1
    _assert_close(weights_two, weights_one, 1e-5)
    assert sorted(name for name in os.listdir(tmp_path / "one") if name.endswith(".index")) == [
        "model.ckpt-4.index", "model.ckpt-6.index"]


def test_sigterm_saves_and_the_same_call_resumes(tmp_path):
    from albert_tf.training import interrupt

    _, uninterrupted = _train(tmp_path / "whole")

    def terminate(stats):
        if stats["global_step"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(interrupt.Interrupted) as caught:
        _train(tmp_path / "cut", callback=terminate)
    assert caught.value.signum == signal.SIGTERM and caught.value.step == 2
    assert os.path.exists(tmp_path / "cut" / "model.ckpt-2.index")
    result, resumed = _train(tmp_path / "cut")
    assert result["global_step"] == STEPS
    _assert_close(resumed, uninterrupted, 1e-5)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains(tmp_path, policy):
    from albert_tf.training import optimization

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        # Under mixed_float16 the optimizer is a LossScaleOptimizer (dynamic loss scaling) around LAMB/AdamW.
        assert isinstance(optimization.create_optimizer(1e-2, 6, 1), keras.optimizers.LossScaleOptimizer) == (
            policy == "mixed_float16")
        result, weights = _train(tmp_path / policy)
    finally:
        keras.config.set_dtype_policy(previous)
    assert result["global_step"] == STEPS and np.isfinite(result["loss"])
    assert all(w.dtype == np.float32 for w in weights)
