"""Resuming a run with a model of other shapes (another `--albert_config_file`) on every backend: one line naming
the weight, both shapes and the flag; no checkpoint moved aside or written (a checkpoint is damaged only when its
files cannot be read); the same call with the run's own config then resumes.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import pytest

from albert_tf.errors import InputError
from support import backend_runs

pytestmark = pytest.mark.e2e


def test_another_config_is_one_line_and_renames_nothing(tmp_path):
    model_dir = tmp_path / "run"
    backend_runs.train_classifier(model_dir, steps=2)
    before = backend_runs.files(model_dir)
    with pytest.raises(InputError) as caught:
        backend_runs.train_classifier(model_dir, steps=4, config={"hidden_size": 32, "intermediate_size": 64})
    message = str(caught.value)
    assert "\n" not in message and "--albert_config_file" in message, message
    assert "(16" in message and "(32" in message or "16)" in message and "32)" in message, message
    assert backend_runs.files(model_dir) == before
    result, _, _ = backend_runs.train_classifier(model_dir, steps=4)
    assert result["global_step"] == 4
