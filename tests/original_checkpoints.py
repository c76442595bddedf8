"""Checkpoints as the original scripts leave them in `--output_dir`, and the same weights in our format.

The original TF1 code saves every variable under its TF1 name plus `global_step` and the optimizer's slots
(`<name>/adam_m`, `<name>/adam_v` for AdamW; `<name>/lamb_m`, `<name>/lamb_v` for LAMB). The weights' names
come from `albert_tf.checkpoints.writer.tf1_tensors` (the name table); the slots and the step are added here.
"""

import os
import re

import tensorflow as tf

from albert_tf.checkpoints.writer import tf1_tensors
from albert_tf.training import loop

MAX_ERROR_CHARS = 1500


def save_original_checkpoint(model, prefix, slots=("adam_m", "adam_v"), global_step=300):
    """Writes `model`'s weights as the original's `prefix` checkpoint, with optimizer slots and `global_step`."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    names, tensors = [], []
    for name, value in tf1_tensors(model):
        names.append(name)
        tensors.append(value)
        for index, slot in enumerate(slots):
            names.append(f"{name}/{slot}")
            tensors.append(tf.fill(tf.shape(value), 0.25 * (index + 1)))
    names.append("global_step")
    tensors.append(tf.constant(global_step, tf.int64))
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
    with open(os.path.join(os.path.dirname(prefix), "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{os.path.basename(prefix)}"\n')
    return prefix


def save_our_checkpoint(model, prefix):
    """Writes `model`'s weights as the training loop does (object-based, `loop.checkpoint_objects`)."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    return tf.train.Checkpoint(**loop.checkpoint_objects(model)).write(prefix)


def truncate_data(prefix):
    """Cuts the checkpoint's data shard in half, as an interrupted copy does."""
    (data,) = tf.io.gfile.glob(prefix + ".data-*")
    size = os.path.getsize(data)
    with open(data, "r+b") as f:
        f.truncate(size // 2)


def assert_short_error(message, prefix):
    """The message names the checkpoint, is short, and holds no dump of tensor values."""
    assert prefix in message, message
    assert len(message) <= MAX_ERROR_CHARS, (len(message), message[:3000])
    assert "numpy=" not in message and "array(" not in message, message
    assert not re.search(r"(-?\d+\.\d+[,\s]+){6}", message), message


def files_with_text(directory):
    """`{name: text}` of the non-checkpoint result files in `directory`."""
    skip = re.compile(r"^(model\.ckpt|checkpoint$|events\.out|.*\.tf_record$)")
    return {name: open(os.path.join(directory, name)).read() for name in sorted(os.listdir(directory))
            if not skip.match(name) and os.path.isfile(os.path.join(directory, name))}
