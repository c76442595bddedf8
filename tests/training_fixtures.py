"""A tiny pretrainer's config and features, and the helpers of the multi-process training tests."""

import os
import socket
import subprocess
import numpy as np
import pytest


TINY = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)
SEQ, PRED = 12, 3


def make_features(num_examples, seed=0):
    """Random pretraining features with every masked_lm_weight 1 (so per-replica means = global mean)."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, TINY["vocab_size"], size=(num_examples, SEQ)).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": np.ones((num_examples, SEQ), np.int32),
        "segment_ids": (np.arange(SEQ)[None, :] >= SEQ // 2).astype(np.int32).repeat(num_examples, 0),
        "masked_lm_positions": np.tile(np.array([[1, 4, 7]], np.int32), (num_examples, 1)),
        "masked_lm_ids": ids[:, [1, 4, 7]],
        "masked_lm_weights": np.ones((num_examples, PRED), np.float32),
        "next_sentence_labels": rng.randint(0, 2, size=(num_examples, 1)).astype(np.int32),
    }


def _env(**extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def _wait(proc, timeout):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"worker timed out after {timeout}s:\n{out[-3000:]}")
    return proc.returncode, out


def _load(path):
    with np.load(path) as data:
        return [data[k] for k in sorted(data.files, key=lambda k: int(k.split("_")[1]))]


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


TINY_CLASSIFIER = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)


def train_tiny_classifier(model_dir, num_train_steps, dropout=0.0, keep=10):
    """A tiny classifier (the head's dropout 0.1, the encoder's `dropout`) trained to `num_train_steps` in
    `model_dir` by `loop.run_training` as the runners call it (a checkpoint every 2 steps, `keep` kept), resuming
    from what is there; returns `(result, weights)`."""
    import tensorflow as tf   # pylint: disable=import-outside-toplevel
    import albert_tf   # pylint: disable=import-outside-toplevel
    from albert_tf.tasks.glue.model import classifier_loss   # pylint: disable=import-outside-toplevel
    from albert_tf.training import loop, optimization   # pylint: disable=import-outside-toplevel
    rng = np.random.RandomState(0)
    features = {"input_ids": rng.randint(5, 40, (8, 8)).astype(np.int32),
                "input_mask": np.ones((8, 8), np.int32), "segment_ids": np.zeros((8, 8), np.int32),
                "label_ids": rng.randint(0, 2, (8,)).astype(np.int32)}

    def dataset_fn(context):
        del context
        return tf.data.Dataset.from_tensor_slices(features).repeat().batch(2, drop_remainder=True)

    def loss_fn(model, batch, training):
        outputs = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=training)
        return tf.reduce_mean(classifier_loss(outputs, batch["label_ids"], 2)), {}

    tf.keras.utils.set_random_seed(1)
    config = dict(TINY_CLASSIFIER, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(config), num_labels=2)
    opt = optimization.create_optimizer(1e-3, num_train_steps, 1, optimizer="adamw")
    result = loop.run_training(model, opt, loss_fn, dataset_fn, tf.distribute.get_strategy(), model_dir,
                               num_train_steps, iterations_per_loop=2, save_checkpoints_steps=2,
                               keep_checkpoint_max=keep)
    return result, [w.numpy() for w in model.weights]
