"""Ctrl-C and SIGTERM during `run_classifier.py --do_train` under KERAS_BACKEND=jax: the step in flight finishes, a
checkpoint is written at its step in the TensorFlow runners' format, one line, exit 130 / 143, and the same command
resumes from it (as tests/training/test_interrupts.py checks on TensorFlow).

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import keras
import pytest

from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)
from interrupting import ctrl_c_then_sigterm

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]


def test_run_classifier_ctrl_c_and_sigterm_under_jax(glue_root, model_files, tmp_path):  # noqa: F811
    ctrl_c_then_sigterm(glue_root, model_files, tmp_path, KERAS_BACKEND="jax")
