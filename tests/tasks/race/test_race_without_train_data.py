"""`run_race --do_eval --do_predict` without `--nodo_train` (`do_train` is true by default, as in the original)
on a data directory without `RACE/train`: one line that names the missing directory and `--nodo_train`."""

import os
import subprocess
import sys

import pytest

import repo_paths
import squad_fixtures as fx


@pytest.mark.e2e
def test_the_missing_train_directory_names_nodo_train(tmp_path):
    spm_file, _, config_file = fx.model_files(tmp_path)
    os.makedirs(tmp_path / "data" / "RACE" / "dev")
    proc = subprocess.run(
        [sys.executable, os.path.join(repo_paths.REPO, "run_race.py"), f"--data_dir={tmp_path / 'data'}",
         f"--output_dir={tmp_path / 'out'}", f"--albert_config_file={config_file}", f"--spm_model_file={spm_file}",
         "--max_seq_length=64", "--max_qa_length=16", "--do_eval", "--do_predict"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("run_race.py: error: RACE train directory not found") and "--nodo_train" in line, line
    written = os.listdir(tmp_path / "out") if os.path.isdir(tmp_path / "out") else []
    assert not [name for name in written if name.startswith("model.ckpt")], written
