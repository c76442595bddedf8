"""`albert-reproduce` under KERAS_BACKEND=jax: every task of the original's recipes on tiny fixtures trains, is
scored, writes `results.md` and resumes, as tests/test_reproduce.py checks on TensorFlow (the same test, run here
under JAX).

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import keras
import pytest

from reproduce_runs import reproduce_every_task

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX runners")]


def test_every_task_reproduces_under_jax(tmp_path):
    reproduce_every_task(tmp_path)
