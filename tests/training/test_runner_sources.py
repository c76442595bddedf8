"""`run_squad.py` and `run_race.py` with only `--init_checkpoint`: the config and the SentencePiece model come
from the release directory, as for `run_classifier.py` and `run_ner.py`."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1
import original_checkpoints as oc
import squad_fixtures as fx
from race_fixtures import MAX_QA, MAX_SEQ, workdir  # noqa: F401  (a fixture)
import repo_paths

REPO = repo_paths.REPO


def _release(model, directory, config_file, spm_file):
    """A release directory in Google's layout: `albert_config.json`, `30k-clean.model`, `model.ckpt-best`."""
    ids = np.ones((1, 8), np.int32)
    features = {"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}
    if isinstance(model, AlbertRace):
        features = {k: v[:, None].repeat(4, 1) for k, v in features.items()}
    model(features, training=False)
    oc.save_original_checkpoint(model, str(directory / "model.ckpt-best"), slots=())
    shutil.copy(config_file, directory / "albert_config.json")
    shutil.copy(spm_file, directory / "30k-clean.model")
    return str(directory)


def _run(script, args, cwd):
    return subprocess.run([sys.executable, os.path.join(REPO, script)] + args, capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=400)


@pytest.mark.e2e
def test_squad_and_race_runners_take_config_and_vocabulary_from_the_checkpoint(workdir, tmp_path):  # noqa: F811
    config_file, spm_file = workdir["config_file"], workdir["spm"]
    squad_release = _release(AlbertSquadV1(workdir["config"]), tmp_path / "squad_release", config_file, spm_file)
    data = fx.write_toy(str(tmp_path / "toy.json"), with_negative=False)
    proc = _run("run_squad.py", [f"--init_checkpoint={squad_release}", f"--output_dir={tmp_path / 'squad'}",
                                 f"--predict_file={data}", "--do_predict", "--max_seq_length=64", "--doc_stride=32",
                                 "--max_query_length=12", "--predict_batch_size=8"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.load(open(tmp_path / "squad" / "predictions.json"))

    race_release = _release(AlbertRace(workdir["config"]), tmp_path / "race_release", config_file, spm_file)
    proc = _run("run_race.py", [f"--init_checkpoint={race_release}", f"--output_dir={tmp_path / 'race'}",
                                f"--data_dir={workdir['root'] / 'all_form'}", "--nodo_train", "--nodo_eval",
                                "--do_predict", f"--max_seq_length={MAX_SEQ}", f"--max_qa_length={MAX_QA}",
                                "--predict_batch_size=4"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert open(tmp_path / "race" / "predictions.tsv").read().splitlines()[1:]
    # Without a checkpoint that brings them, the missing flags are named.
    proc = _run("run_race.py", [f"--output_dir={tmp_path / 'race2'}", f"--data_dir={workdir['root'] / 'all_form'}",
                                "--nodo_train", "--nodo_eval", "--do_predict"], tmp_path)
    assert proc.returncode == 2 and "albert_config" in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
