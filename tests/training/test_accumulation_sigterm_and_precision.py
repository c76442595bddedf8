"""The training loop on every backend, on a tiny classifier with dropout off: gradient accumulation of 2
micro-batches equals one batch of both; SIGTERM during training saves the step reached and raises `Interrupted`,
and the same call resumes (the input position from the checkpoint) to the uninterrupted run's weights; the
`mixed_bfloat16` and `mixed_float16` (loss scaling) policies train; under JAX the step compiles once per run.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import os
import signal

import keras
import numpy as np
import pytest

from support import backend_runs

pytestmark = pytest.mark.e2e
STEPS = 6


def _assert_close(a, b, tolerance):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=0, atol=tolerance)


def test_accumulation_equals_one_batch(tmp_path):
    one, model_one, _ = backend_runs.train_classifier(tmp_path / "one", every=4, keep=3)
    two, model_two, _ = backend_runs.train_classifier(tmp_path / "two", every=4, keep=3, accumulation=2)
    assert one["global_step"] == two["global_step"] == STEPS
    if backend_runs.backend() == "jax":
        assert one["compilations"] == two["compilations"] == 1
    # TensorFlow on the CPU clips by a norm that counts a repeated embedding id once per occurrence in one batch
    # and sums the micro-batches' dense gradients first (docs/tpu.md): the embeddings move by up to 4e-5 more.
    _assert_close(backend_runs.weights(model_two), backend_runs.weights(model_one),
                  1e-5 if backend_runs.backend() == "jax" else 1e-4)
    assert [name for name in backend_runs.files(tmp_path / "one") if name.endswith(".index")] == [
        "model.ckpt-4.index", "model.ckpt-6.index"]


def test_sigterm_saves_and_the_same_call_resumes(tmp_path):
    from albert_tf.training import interrupt

    _, whole, _ = backend_runs.train_classifier(tmp_path / "whole", every=4)

    def terminate(stats):
        if stats["global_step"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(interrupt.Interrupted) as caught:
        backend_runs.train_classifier(tmp_path / "cut", every=4, callback=terminate)
    assert caught.value.signum == signal.SIGTERM and caught.value.step == 2
    assert os.path.exists(tmp_path / "cut" / "model.ckpt-2.index")
    result, resumed, _ = backend_runs.train_classifier(tmp_path / "cut", every=4)
    assert result["global_step"] == STEPS
    _assert_close(backend_runs.weights(resumed), backend_runs.weights(whole), 1e-5)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains(tmp_path, policy):
    from albert_tf.training import optimization

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        # Under mixed_float16 the optimizer is a LossScaleOptimizer (dynamic loss scaling) around LAMB/AdamW.
        assert isinstance(optimization.create_optimizer(1e-2, 6, 1), keras.optimizers.LossScaleOptimizer) == (
            policy == "mixed_float16")
        result, model, _ = backend_runs.train_classifier(tmp_path / policy, every=4)
    finally:
        keras.config.set_dtype_policy(previous)
    assert result["global_step"] == STEPS and np.isfinite(result["loss"])
    assert all(w.dtype == np.float32 for w in backend_runs.weights(model))
