"""Ctrl-C and SIGTERM during `run_classifier.py --do_train` under KERAS_BACKEND=jax: the step in flight finishes, a
checkpoint is written at its step in the TensorFlow runners' format, one line, exit 130 / 143, and the same command
resumes from it (as tests/training/test_interrupts.py checks on TensorFlow).

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import os
import signal

import keras
import pytest

from albert_tf.training import loop
from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)
from interrupting import endless_classifier_args, interrupt_when_training, interrupted_step, start

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]


def test_run_classifier_ctrl_c_and_sigterm_under_jax(glue_root, model_files, tmp_path):  # noqa: F811
    out_dir = tmp_path / "out"
    args = endless_classifier_args(glue_root, model_files, out_dir)
    code, out = interrupt_when_training(start("run_classifier.py", args, tmp_path, KERAS_BACKEND="jax"),
                                        signal.SIGINT)
    assert code == 130, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    step = interrupted_step(out)
    assert step >= 20
    assert [s for s, _ in loop.list_checkpoints(str(out_dir))] == [step]
    assert not [name for name in os.listdir(out_dir) if "tmp" in name]

    code, out = interrupt_when_training(start("run_classifier.py", args, tmp_path, KERAS_BACKEND="jax"),
                                        signal.SIGTERM)
    assert code == 143, out[-3000:]
    assert "Resuming from" in out and "Traceback" not in out
    later = interrupted_step(out)
    assert later > step and [s for s, _ in loop.list_checkpoints(str(out_dir))] == [step, later]
