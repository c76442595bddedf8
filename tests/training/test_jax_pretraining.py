"""`run_pretraining` under KERAS_BACKEND=jax on 8 CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count=8`,
the TPU stand-in), from a tiny release in the original's layout (TF1 names, LAMB slots, `global_step`) with dropout
off, 6 LAMB steps, checkpoints at 3 and 6:

* it ends with the weights of the same run under the TensorFlow backend (one device, a fresh process, its clip
  norm the original's on TPU: `dense_gradient_norm=True`, what JAX computes), in a checkpoint that the TensorFlow
  tools (`restore_checkpoint`) read;
* stopped after step 3 (its step-6 checkpoint cut short, as a preemption while writing leaves it) and started
  again, it goes on past the damaged checkpoint and ends with the uninterrupted run's weights;
* two processes of 4 devices each (loopback, `keras.distribution.initialize()`) end with one process's weights;
* the jitted step compiles once in each run.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import os

import keras
import numpy as np
import pytest

import jax_training_fixtures as fixtures
from fresh_process import run_measurement

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX training loop")]
EIGHT_DEVICES = {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("jax_pretraining")
    data = root / "data"
    data.mkdir()
    fixtures.write_pretraining_data(str(data))
    release = str(root / "release" / "model.ckpt")
    dirs = {name: str(root / name) for name in ("tf", "jax", "jax_resumed", "jax_two_processes")}
    tf_result = run_measurement("jax_training_fixtures", "tf_release_and_run", str(data), release, dirs["tf"], True,
                                env={"KERAS_BACKEND": "tensorflow"})
    jax_results = run_measurement("jax_training_fixtures", "jax_run_and_resume", str(data), release, dirs["jax"],
                                  dirs["jax_resumed"], env=EIGHT_DEVICES)
    two = fixtures.jax_processes(str(data), release, dirs["jax_two_processes"])
    return dirs, tf_result, jax_results, two


def _values(directory):
    return fixtures.model_values(os.path.join(directory, "model.ckpt-6"))


def _max_difference(a, b):
    return max(float(np.abs(np.asarray(a[k]) - np.asarray(b[k])).max()) for k in a)


def test_jax_ends_with_the_tensorflow_weights_in_a_checkpoint_tensorflow_reads(runs):
    dirs, tf_result, jax_results, _ = runs
    assert tf_result["global_step"] == jax_results[0]["global_step"] == 6
    assert {n for n in os.listdir(dirs["jax"]) if n.startswith("model.ckpt")} == {
        n for n in os.listdir(dirs["tf"]) if n.startswith("model.ckpt")}
    tf_read = run_measurement("jax_training_fixtures", "tf_read", os.path.join(dirs["jax"], "model.ckpt-6"),
                              env={"KERAS_BACKEND": "tensorflow"})
    tf_own = run_measurement("jax_training_fixtures", "tf_read", os.path.join(dirs["tf"], "model.ckpt-6"),
                             env={"KERAS_BACKEND": "tensorflow"})
    assert sorted(tf_read) == sorted(tf_own)
    for path in tf_own:
        expected, got = np.asarray(tf_own[path]), np.asarray(tf_read[path])
        # The issue asks 2e-4; with the same clip norm as TensorFlow's reference the runs agree to float rounding
        # (the original's CPU/GPU norm, counting repeated embedding ids, moves the Adam-only biases and
        # LayerNorm parameters by 2.6e-4 over these 6 steps: docs/tpu.md).
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5, err_msg=path)
    assert abs(jax_results[0]["loss"] - tf_result["loss"]) < 1e-4


def test_a_run_stopped_at_step_3_resumes_past_a_damaged_checkpoint(runs):
    dirs, _, jax_results, _ = runs
    names = set(os.listdir(dirs["jax_resumed"]))
    assert {"model.ckpt-6-damaged.index", "model.ckpt-3.index", "model.ckpt-6.index"} <= names
    assert _max_difference(_values(dirs["jax_resumed"]), _values(dirs["jax"])) <= 1e-5


def test_two_processes_of_four_devices_equal_one_of_eight(runs):
    dirs, _, jax_results, two = runs
    assert [r["global_step"] for r in two] == [6, 6]
    assert _max_difference(_values(dirs["jax_two_processes"]), _values(dirs["jax"])) <= 1e-5
    # Process 0 alone writes: one TensorBoard file per run, no lock left behind.
    events = [n for n in os.listdir(dirs["jax_two_processes"]) if n.startswith("events.out")]
    assert len(events) == 1
    assert not any(n.startswith(".albert_tf.lock") for n in os.listdir(dirs["jax_two_processes"]))


def test_the_step_compiles_once_per_run(runs):
    _, _, jax_results, two = runs
    assert [r["compilations"] for r in jax_results + two] == [1, 1, 1, 1]
