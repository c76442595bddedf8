"""Resuming a LoRA run with another `--lora_rank` (issue 67) on every backend: one line naming both ranks, before
any restore; the checkpoint is not moved aside as damaged.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import os

import pytest

from albert_tf.errors import InputError
from support import backend_runs


@pytest.mark.e2e
def test_resuming_with_another_rank_names_both(tmp_path):
    model_dir = tmp_path / "run"
    backend_runs.train_classifier(model_dir, steps=2, lora_rank=4)
    before = backend_runs.files(model_dir)
    with pytest.raises(InputError) as e:
        backend_runs.train_classifier(model_dir, steps=4, lora_rank=8)
    message = str(e.value)
    assert "\n" not in message and "rank 4" in message and "rank 8" in message and "--lora_rank=4" in message, message
    assert os.path.exists(model_dir / "model.ckpt-2.index")   # not moved aside as damaged
    assert backend_runs.files(model_dir) == before
