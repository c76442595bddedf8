"""SIGINT / SIGTERM: the step in flight finishes, a checkpoint is written, one line, exit 130 / 143.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier (the
runner's command then runs under KERAS_BACKEND=jax too)."""

import os
import signal
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.tasks.glue.model import classifier_loss
from albert_tf.training import interrupt, loop, optimization
from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)
from interrupting import ctrl_c_then_sigterm
from support import backend_runs

TINY = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)


def _train(model_dir, num_train_steps, signal_at_batch=None):
    """Trains a tiny classifier; the input sends SIGTERM to this process when it makes batch `signal_at_batch`
    (while the `tf.function` of the loop runs: the Python handler cannot run then)."""
    rng = np.random.RandomState(0)
    features = {"input_ids": rng.randint(5, 40, (8, 8)).astype(np.int32),
                "input_mask": np.ones((8, 8), np.int32), "segment_ids": np.zeros((8, 8), np.int32),
                "label_ids": rng.randint(0, 2, (8,)).astype(np.int32)}

    def send(index):
        if signal_at_batch is not None and int(index) == signal_at_batch:
            os.kill(os.getpid(), signal.SIGTERM)
        return index

    def dataset_fn(context):
        del context
        ds = tf.data.Dataset.from_tensor_slices(features).repeat().batch(4, drop_remainder=True)
        ds = ds.enumerate().map(lambda i, f: (tf.numpy_function(send, [i], tf.int64), f))
        return ds.map(lambda i, f: f)

    def loss_fn(model, batch, training):
        outputs = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=training)
        return keras.ops.mean(classifier_loss(outputs, batch["label_ids"], 2)), {}

    keras.utils.set_random_seed(1)
    devices = backend_runs.devices()
    with devices.scope():
        model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(TINY), num_labels=2)
        opt = optimization.create_optimizer(1e-3, num_train_steps, 1, optimizer="adamw")
    return loop.run_training(model, opt, loss_fn, dataset_fn, devices, model_dir,
                             num_train_steps, iterations_per_loop=num_train_steps, save_checkpoints_steps=0,
                             checkpoint_iterator=False)   # a numpy_function input cannot be saved


def test_sigterm_in_a_loop_checkpoints_the_step_and_raises(tmp_path):
    model_dir = str(tmp_path / "run")
    with pytest.raises(interrupt.Interrupted) as caught:
        _train(model_dir, 200, signal_at_batch=3)
    step = caught.value.step
    assert caught.value.signum == signal.SIGTERM and caught.value.exit_code == 143
    assert caught.value.line() == f"interrupted at step {step}; the same command resumes"
    # The loop stopped within a few steps of the signal (the input runs a little ahead), long before 200.
    assert 1 <= step <= 10
    assert [s for s, _ in loop.list_checkpoints(model_dir)] == [step]
    assert not [name for name in os.listdir(model_dir) if "tmp" in name]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL   # the handlers are put back
    assert _train(model_dir, step + 2)["global_step"] == step + 2   # the same call resumes


def test_signal_outside_a_loop_raises_at_once():
    # What was there before: Python's default, or SIG_IGN in a process started in the background (`nohup`, `&`,
    # some CI runners), which inherits SIGINT ignored.
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(interrupt.Interrupted) as caught:
        with interrupt.handling_signals():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    assert caught.value.step is None and caught.value.exit_code == 130
    assert caught.value.line() == "interrupted; the same command resumes"
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.e2e
def test_run_classifier_ctrl_c_and_sigterm(glue_root, model_files, tmp_path):  # noqa: F811
    """Issue row: Ctrl-C during `run_classifier.py --do_train` gives one line and exit 130, not a traceback;
    SIGTERM (a preemption) exit 143; each leaves a checkpoint at its step and the same command resumes."""
    out = ctrl_c_then_sigterm(glue_root, model_files, tmp_path, KERAS_BACKEND=keras.backend.backend())
    assert "restarts the input pipeline" not in out   # one device: the iterator is in the checkpoint, no seed needed
