"""`run_squad` (1.1 and 2.0), `run_race` and `run_ner` under KERAS_BACKEND=jax on 8 CPU devices (the TPU stand-in):
each trains two steps through one jitted step (compiled once) and evaluates its checkpoints. (`run_classifier` and
`run_pretraining`: tests/training/test_jax_classifier.py and test_jax_pretraining.py.)

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import keras
import pytest

from fresh_process import run_measurement

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]


def test_squad_race_and_ner_train_on_eight_devices_and_evaluate(tmp_path):
    results = run_measurement("jax_training_fixtures", "jax_task_runners", str(tmp_path / "data"),
                              str(tmp_path / "out"),
                              env={"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
                              timeout=900)
    assert sorted(results) == ["ner", "race", "squad_v1", "squad_v2"]
    for name, result in results.items():
        assert result["global_step"] == 2 and result["compilations"] == 1, (name, result)
        assert result["scores"], (name, result)
