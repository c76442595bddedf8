"""A run directory whose `checkpoint` state file names a checkpoint of another directory (a copied or moved run):
every reader (`albert-export --input`, `from_pretrained`, `albert-convert`, the pipelines, all through
`resolve_source`) reads the directory's own newest checkpoint, as the runners do, or refuses naming both paths."""

import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import resolve_source
from albert_tf.errors import InputError
from original_checkpoints import write_google_checkpoint

NAME = "bert/embeddings/word_embeddings"


def _run_dir(directory, value, steps):
    for step in steps:
        write_google_checkpoint({NAME: np.full((4, 2), value + step, np.float32)},
                                os.path.join(directory, f"model.ckpt-{step}"), optimizer_slots=False,
                                state_file=True)
    return directory


def _point_away(directory, target):
    with open(os.path.join(directory, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{target}"\nall_model_checkpoint_paths: "{target}"\n')


def test_own_newest_checkpoint_not_the_one_named_elsewhere(tmp_path, caplog):
    other = _run_dir(str(tmp_path / "other"), 100.0, [20])
    run = _run_dir(str(tmp_path / "run"), 0.0, [2, 4])
    _point_away(run, os.path.join(other, "model.ckpt-20"))
    caplog.set_level(logging.WARNING, logger="absl")
    with resolve_source(run) as source:
        assert source.checkpoint_prefix == os.path.join(run, "model.ckpt-4")
        np.testing.assert_array_equal(tf.train.load_checkpoint(source.checkpoint_prefix).get_tensor(NAME), 4.0)
    assert os.path.join(other, "model.ckpt-20") in caplog.text   # the warning names both
    with open(os.path.join(run, "checkpoint")) as f:
        assert "other" in f.read()   # the state file is read, not rewritten


def test_state_file_alone_naming_another_directory_is_refused(tmp_path):
    other = _run_dir(str(tmp_path / "other"), 100.0, [20])
    run = str(tmp_path / "run")
    os.makedirs(run)
    shutil.copy(os.path.join(other, "checkpoint"), run)
    _point_away(run, os.path.join(other, "model.ckpt-20"))
    with pytest.raises(InputError) as e:
        with resolve_source(run):
            pass
    message = str(e.value)
    assert "\n" not in message and run in message and os.path.join(other, "model.ckpt-20") in message, message
