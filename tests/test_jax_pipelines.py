"""Under KERAS_BACKEND=jax: `albert_tf.pipeline` on a checkpoint of the original's layout answers what it answers
under TensorFlow (the runners' inference step, `albert_tf.training.inference`, runs the model: one `jax.jit` per
input shape); `albert-export --format=tflite` and `--format=mediapipe` say in one line that LiteRT exports are
TensorFlow's, and write nothing.

Runs in the backends tier (.ci/run) under KERAS_BACKEND=jax: it needs jax.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)


def _env(backend):
    return dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=os.pathsep.join([REPO, TESTS]),
                TF_CPP_MIN_LOG_LEVEL="2")


def _answers(backend, root, out):
    proc = subprocess.run([sys.executable, os.path.join(TESTS, "jax_pipeline_runs.py"), str(root), str(out)],
                          env=_env(backend), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.e2e
def test_a_pipeline_on_a_checkpoint_answers_under_jax_as_under_tensorflow(tmp_path):
    root = tmp_path / "root"
    expected = _answers("tensorflow", root, tmp_path / "tf.json")
    got = _answers("jax", root, tmp_path / "jax.json")
    assert (expected.pop("backend"), got.pop("backend")) == ("tensorflow", "jax")
    for want, have in zip(expected["text-classification"], got["text-classification"]):
        assert have["label"] == want["label"]
        np.testing.assert_allclose(have["scores"], want["scores"], atol=1e-5)
    for want, have in zip(expected["question-answering"], got["question-answering"]):
        assert (have["answer"], have["start"], have["end"]) == (want["answer"], want["start"], want["end"])
        assert have["score"] == pytest.approx(want["score"], abs=1e-4)


@pytest.mark.e2e
@pytest.mark.parametrize("format_", ["tflite", "mediapipe"])
def test_litert_exports_under_jax_are_refused_in_one_line(tmp_path, format_):
    proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-export", "--input=unread",
                           f"--export_dir={tmp_path / 'out'}", f"--format={format_}", "--model=classifier"],
                          env=_env("jax"), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("albert-export: error: ") and f"--format={format_} converts a TensorFlow graph" in line
    assert "KERAS_BACKEND is 'jax'" in line and f"KERAS_BACKEND=tensorflow albert-export --format={format_}" in line
    assert not (tmp_path / "out").exists()
