"""What a run refuses before any work, on every backend: `use_tpu` on a machine without a TPU, and a
`model_parallel_devices` that does not divide every dimension the model axis shards (one line naming each).

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import pytest

import albert_tf
from albert_tf.errors import InputError
from albert_tf.training import driver, jax_distribution
from support import backend_runs


def test_use_tpu_without_a_tpu_is_refused():
    with pytest.raises(InputError) as caught:
        driver.prepare_runtime(use_tpu=True, tpu_name="local")
    assert "needs a TPU, and none was found" in str(caught.value) and "\n" not in str(caught.value)


def test_model_parallel_devices_must_divide_every_sharded_dimension():
    config = albert_tf.AlbertConfig.from_dict(dict(backend_runs.CONFIG, intermediate_size=37, hidden_size=18))
    with pytest.raises(InputError) as caught:
        jax_distribution.check_model_parallel(config, 4, "albert_config.json")
    message = str(caught.value)
    assert "\n" not in message and "intermediate_size 37" in message and "hidden_size 18" in message, message
    assert "albert_config.json" in message
    jax_distribution.check_model_parallel(albert_tf.AlbertConfig.from_dict(backend_runs.CONFIG), 2, "c.json")

