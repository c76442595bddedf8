"""Under KERAS_BACKEND=jax: `albert_tf.pipeline` on a checkpoint of the original's layout answers what it answers
under TensorFlow (the runners' inference step, `albert_tf.training.inference`, runs the model: one `jax.jit` per
input shape); `albert-export --format=tflite` and `--format=mediapipe` say in one line that LiteRT exports are
TensorFlow's, and write nothing, as a runner's `--export_dir` that is a regular file (refused before the run,
without the export's TensorFlow process); `model.predict` on a dataset without elements is one line and the model answers
the next call.

Runs in the backends tier (.ci/run) under KERAS_BACKEND=jax: it needs jax.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

from glue_fixtures import glue_root, model_files  # noqa: E402,F401  (fixtures)

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


def test_predict_on_an_empty_dataset_leaves_the_model_usable_under_jax(tmp_path):
    import keras
    import tensorflow as tf

    from albert_tf import AlbertClassifier, AlbertPreprocessor
    from albert_tf.errors import InputError
    import squad_fixtures as fx

    if keras.backend.backend() != "jax":
        pytest.skip("KERAS_BACKEND=jax")
    spm_file, config, _ = fx.model_files(tmp_path)
    keras.utils.set_random_seed(2)
    model = AlbertClassifier(config, num_labels=2, preprocessor=AlbertPreprocessor(spm_file, max_seq_length=32))
    before = model.predict(["a tower ."], verbose=0)["probabilities"]
    for dataset, message in ((tf.data.Dataset.from_tensor_slices(["a"]).take(0).batch(2), "without elements"),
                             (tf.data.Dataset.from_tensor_slices(["a"]).filter(lambda t: False).batch(2),
                              "yielded no batch")):
        with pytest.raises(InputError, match=message):
            model.predict(dataset, verbose=0)
        np.testing.assert_allclose(model.predict(["a tower ."], verbose=0)["probabilities"], before, atol=1e-6)


@pytest.mark.e2e
def test_a_runner_export_dir_that_is_a_file_is_refused_before_the_run_under_jax(glue_root, model_files,  # noqa: F811
                                                                                  tmp_path):
    (tmp_path / "a_file").write_text("mine")
    args = ["--task_name=SST-2", f"--data_dir={glue_root}", f"--output_dir={tmp_path / 'out'}",
            f"--albert_config_file={model_files['config_file']}", f"--spm_model_file={model_files['spm']}",
            "--max_seq_length=32", "--train_step=2", "--do_train", f"--export_dir={tmp_path / 'a_file'}"]
    proc = subprocess.run([sys.executable, os.path.join(REPO, "run_classifier.py"), *args], env=_env("jax"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("run_classifier.py: error: `export_dir=") and "is a file; expected a directory" in line
    assert "in a TensorFlow process" not in proc.stderr and (tmp_path / "a_file").read_text() == "mine"
    written = os.listdir(tmp_path / "out") if (tmp_path / "out").exists() else []
    assert not [name for name in written if name.startswith("model.ckpt")], written
