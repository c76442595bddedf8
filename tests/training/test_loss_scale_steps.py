"""`mixed_float16` on every backend: a step that the loss scaler skips (a gradient overflow) does not count toward
the run's steps: a run of 6 steps makes 6 optimizer updates, `model.ckpt-6` holds step 6, and the same call again
trains nothing and writes nothing.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training.optimization import inner_optimizer
from support import backend_runs

pytestmark = pytest.mark.e2e
INITIAL_SCALE = 2.0 ** 24          # overflows in float16 for a few steps, each halving the scale


def _loss_scaled(optimizer):
    return keras.optimizers.LossScaleOptimizer(inner_optimizer(optimizer), initial_scale=INITIAL_SCALE)


@pytest.fixture
def float16_policy():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    yield
    keras.config.set_dtype_policy(previous)


def test_skipped_steps_do_not_count(tmp_path, float16_policy):
    del float16_policy
    model_dir = tmp_path / "run"
    result, _, optimizer = backend_runs.train_classifier(model_dir, steps=6, every=3, per_loop=3,
                                                         optimizer=_loss_scaled)
    assert result["global_step"] == 6
    scale = float(np.asarray(backend_runs.host(optimizer.dynamic_scale)))
    assert scale < INITIAL_SCALE          # steps were skipped on the way
    reader = tf.train.load_checkpoint(str(model_dir / "model.ckpt-6"))
    assert int(reader.get_tensor("optimizer/iteration/.ATTRIBUTES/VARIABLE_VALUE")) == 6
    files = backend_runs.files(model_dir)
    again, _, _ = backend_runs.train_classifier(model_dir, steps=6, every=3, per_loop=3, optimizer=_loss_scaled)
    assert again["global_step"] == 6 and "loss" not in again        # nothing trained
    assert backend_runs.files(model_dir) == files
