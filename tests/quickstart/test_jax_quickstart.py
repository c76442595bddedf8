"""`albert-quickstart` under KERAS_BACKEND=jax with the tiny budget of tests/quickstart/test_quickstart.py: it
pretrains and fine-tunes through the JAX loop, exports in a TensorFlow process of its own and serves that export,
and writes the same artifacts and summary.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import json

import keras
import pytest

from quickstart_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX runners")]


def test_the_quickstart_runs_under_jax(tmp_path):
    proc = run_cli(tmp_path, env={"KERAS_BACKEND": "jax"})
    assert "in a TensorFlow process" in proc.stderr
    for name in ("pretrain/model.ckpt-12.index", "finetune/pretrained/model.ckpt-best.index", "quickstart_curves.png",
                 "quickstart_summary.json"):
        assert (tmp_path / name).exists(), name
    summary = json.loads((tmp_path / "quickstart_summary.json").read_text())
    assert len(summary["served"]["answers"]) == 5 and "serve_text" in summary["served"]["signatures"]
    assert (tmp_path / "export").is_dir() and summary["finetune"]["export_path"].startswith(str(tmp_path / "export"))
    for key in ("untrained", "trained"):
        assert 0.0 <= summary[key]["masked_lm_accuracy"] < 100.0
