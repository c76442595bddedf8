"""Resuming past a damaged newest checkpoint (issue 67): an orphan `.data` (its `.index` deleted) is moved aside
with a warning that names it, never blamed on the state file nor overwritten; the same step damaged twice keeps
both damaged copies (numbered); a correct recovery logs no TensorFlow `ERROR`.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import logging
import os
import shutil

import pytest

from support import backend_runs


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def train_tiny_classifier(model_dir, steps):
    return backend_runs.train_classifier(model_dir, steps=steps)


def _data(prefix):
    return prefix + ".data-00000-of-00001"


@pytest.mark.e2e
def test_orphan_data_then_a_second_damage_of_the_same_step(tmp_path, caplog):
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(caplog.handler)   # TensorFlow's logger does not propagate to the root
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="absl")
    try:
        model_dir = str(tmp_path / "run")
        train_tiny_classifier(model_dir, 4)
        newest = os.path.join(model_dir, "model.ckpt-4")
        orphan = _read(_data(newest))
        os.remove(newest + ".index")
        caplog.clear()
        assert train_tiny_classifier(model_dir, 4)[0]["global_step"] == 4
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert any("model.ckpt-4 has no index" in w and "model.ckpt-4-damaged" in w for w in warnings), warnings
        assert not any("state file" in w for w in warnings), warnings   # the state file is not to blame
        assert "Resuming from " + os.path.join(model_dir, "model.ckpt-2") in caplog.text
        assert _read(_data(newest + "-damaged")) == orphan   # moved aside, not overwritten

        data = _read(_data(newest))   # step 4 written again, now truncated: the second damage of step 4
        with open(_data(newest), "wb") as f:
            f.write(data[:len(data) // 2])
        caplog.clear()
        assert train_tiny_classifier(model_dir, 4)[0]["global_step"] == 4
        assert _read(_data(newest + "-damaged")) == orphan
        assert _read(_data(newest + "-damaged-2")) == data[:len(data) // 2]
        assert os.path.exists(newest + "-damaged-2.index")
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert [w for w in warnings if "is damaged" in w and "model.ckpt-4-damaged-2" in w], warnings
        assert not any("state file" in w for w in warnings), warnings
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert not errors, errors   # no "Couldn't match files for checkpoint" on a correct recovery
    finally:
        tf_logger.removeHandler(caplog.handler)
    shutil.rmtree(model_dir)
