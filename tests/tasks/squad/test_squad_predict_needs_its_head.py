"""`run_squad_v1 --do_predict` without training reads its answers off the SQuAD head: a checkpoint without it (a
CoLA classifier) is refused in one line naming the head it holds, and a runner's `--export_dir` that is a regular
file is refused before any work; nothing is written."""

import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.tasks.glue.model import AlbertClassifier
import repo_paths
import squad_fixtures as fx


@pytest.mark.e2e
def test_predict_from_a_classifier_checkpoint_and_an_export_dir_file_are_refused(tmp_path):
    spm_file, config, config_file = fx.model_files(tmp_path)
    tf.keras.utils.set_random_seed(4)
    classifier = AlbertClassifier(config, num_labels=2)
    ids = tf.ones([1, 8], tf.int32)
    classifier({"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)})
    release = tmp_path / "cola_release"
    release.mkdir()
    save_tf1_checkpoint(classifier, str(release / "model.ckpt-best"))
    shutil.copy(config_file, release / "albert_config.json")
    shutil.copy(spm_file, release / "30k-clean.model")
    predict_file = fx.write_squad(str(tmp_path / "dev.json"), with_negative=False, max_questions=2)
    (tmp_path / "a_file").write_text("mine")
    env = dict(os.environ, PYTHONPATH=repo_paths.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base = [sys.executable, "-m", "albert_tf.run_squad_v1", "--do_predict", f"--init_checkpoint={release}",
            f"--predict_file={predict_file}", f"--output_dir={tmp_path / 'out'}", "--max_seq_length=48",
            "--doc_stride=16", "--max_query_length=12"]
    cases = [([f"--export_dir={tmp_path / 'a_file'}"], "`export_dir=", "is a file; expected a directory"),
             ([], "has no squad_v1 head", "it holds a classifier head")]
    for args, *expected in cases:
        proc = subprocess.run(base + args, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        line = proc.stderr.strip().splitlines()[-1]
        assert line.startswith("run_squad_v1.py: error: ") and all(text in line for text in expected), line
    assert (tmp_path / "a_file").read_text() == "mine"
    assert not os.path.exists(tmp_path / "out" / "predictions.json")
