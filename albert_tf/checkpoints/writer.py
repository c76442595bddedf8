"""Writes a model's weights as a TF1-format checkpoint under the original variable names (the original's scopes).

The result reads like Google's releases: `tf.train.load_checkpoint`, the original `init_from_checkpoint`,
tf-models' `tf2_albert_encoder_checkpoint_converter` and HF's `load_tf_weights_in_albert` all accept it.
Values are float32, one data shard, no optimizer slots and no `global_step`.
"""

import os

import tensorflow as tf
from absl import logging

from albert_tf import fileio
from albert_tf.checkpoints import table


def tf1_tensors(model):
    """Yields `(tf1_name, float32 tensor)` for every variable of `model` in table order.

    An identity transform on a float32 variable yields the variable's current value without a copy.
    """
    for name, target in table.model_targets(model).items():
        value = tf.convert_to_tensor(target.variable)
        if target.transform is not table.IDENTITY:
            value = tf.convert_to_tensor(target.transform.to_tf1(value.numpy()))
        yield name, tf.cast(value, tf.float32)


def save_tf1_checkpoint(model, prefix):
    """Saves `model` to the TF1 checkpoint `prefix` (`prefix.index`, `prefix.data-00000-of-00001`).

    The files are written under a temporary prefix in the same directory, then renamed (data first, index
    last), so a reader never sees a half-written checkpoint.

    Args:
        model: `AlbertModel`, `AlbertPretrainer` or a task model.
        prefix: str, e.g. `out/model.ckpt-best`.

    Returns:
        str, the prefix written.
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    names, tensors = [], []
    for name, tensor in tf1_tensors(model):
        names.append(name)
        tensors.append(tensor)
    # SaveV2 writes one shard: `<prefix>.data-00000-of-00001` and `<prefix>.index`.
    with fileio.atomic_prefix(prefix, (".data-00000-of-00001", ".index")) as tmp_prefix:
        tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                          tensors=tensors)
    logging.info("Wrote %d variables of %s to TF1 checkpoint `%s`.", len(names), type(model).__name__, prefix)
    return prefix
