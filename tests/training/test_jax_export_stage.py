"""`run_classifier.py --do_train --do_predict --export_dir` under KERAS_BACKEND=jax: the export stage runs in a
TensorFlow process of its own (a SavedModel is a TensorFlow graph) on the run's `model.ckpt-best`, and the export,
served from a fresh process as TF Serving loads it (`serve_text`), gives the JAX run's own `test_results.tsv`.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import csv
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from albert_tf.fileio import LOCK_FILE
from albert_tf.quickstart.finetune import serve
from glue_fixtures import REPO, glue_root, model_files  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX runners")]


def test_the_export_stage_of_a_jax_run_serves_its_predictions(glue_root, model_files, tmp_path):  # noqa: F811
    out_dir, export_dir = tmp_path / "out", tmp_path / "export"
    args = ["--task_name=SST-2", f"--data_dir={glue_root}", f"--output_dir={out_dir}",
            f"--albert_config_file={model_files['config_file']}", f"--spm_model_file={model_files['spm']}",
            "--max_seq_length=32", "--train_batch_size=8", "--train_step=6", "--warmup_step=1",
            "--save_checkpoints_steps=6", "--iterations_per_loop=3", "--learning_rate=1e-3", "--do_train",
            "--do_eval", "--do_predict", f"--export_dir={export_dir}"]
    proc = subprocess.run([sys.executable, os.path.join(REPO, "run_classifier.py"), *args], capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "in a TensorFlow process" in proc.stderr
    versions = os.listdir(export_dir)
    assert len(versions) == 1 and os.path.exists(export_dir / versions[0] / "saved_model.pb")
    assert not os.path.exists(out_dir / LOCK_FILE)    # the run's lock, held through the export, is gone

    with open(os.path.join(glue_root, "SST-2", "test.tsv")) as f:
        sentences = [row["sentence"] for row in csv.DictReader(f, delimiter="\t")]
    with open(out_dir / "test_results.tsv") as f:
        want = np.array([[float(v) for v in line.split("\t")] for line in f if line.strip()])
    answers, signatures = serve(str(export_dir / versions[0]), sentences)
    assert "serve_text" in signatures and len(answers) == len(want) == len(sentences)
    got = np.array([answer["score"] for answer in answers])
    np.testing.assert_allclose(got, want.max(axis=1), atol=1e-5)
