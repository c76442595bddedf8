"""Resuming a LoRA run with another `--lora_rank` (issue 67): one line naming both ranks, before any restore."""

import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.errors import InputError
from albert_tf.training import checkpoint_dir, loop
from training_fixtures import TINY_CLASSIFIER


def _classifier(rank):
    model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(TINY_CLASSIFIER), num_labels=2)
    if rank:
        model.enable_lora(rank)
    ids = np.ones([1, 8], np.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}, training=False)
    return model


def test_resuming_with_another_rank_names_both(tmp_path):
    model_dir = str(tmp_path / "run")
    tf.train.Checkpoint(**loop.checkpoint_objects(_classifier(4))).write(os.path.join(model_dir, "model.ckpt-2"))
    with pytest.raises(InputError) as e:
        checkpoint_dir.restore_newest_intact(lambda prefix: None, _classifier(8), model_dir, True)
    message = str(e.value)
    assert "\n" not in message and "rank 4" in message and "rank 8" in message and "--lora_rank=4" in message, message
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-2.index"))   # not moved aside as damaged
