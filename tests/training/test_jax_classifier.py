"""`run_classifier --do_train` under KERAS_BACKEND=jax on 8 CPU devices: data parallel with gradient accumulation,
then LoRA on a `(batch 4, model 2)` mesh (`model_parallel_devices=2`: the attention and FFN kernels sharded over
`model`); the frozen weights stay, the adapters train, the step compiles once. (Evaluation and prediction under JAX
are tested with the inference path.)

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import keras
import pytest

from fresh_process import run_measurement
from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]


def test_run_classifier_trains_on_eight_devices(glue_root, model_files, tmp_path):  # noqa: F811
    result = run_measurement("jax_training_fixtures", "jax_classifier", glue_root, model_files["spm"],
                             model_files["config_file"], str(tmp_path),
                             env={"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
    for run in ("first", "second"):
        assert result[run]["global_step"] == 4 and result[run]["compilations"] == 1
        assert 0.0 < result[run]["loss"] < 5.0
    assert result["specs"] == [[None, "model"], ["model", None]]
    assert result["lora_alpha_saved"] and result["frozen_kept"] and result["adapters_moved"]
