"""Tiny models and optimizers built the same way under every Keras backend, for the JAX training tests: the
TensorFlow side runs in a fresh process (`fresh_process.run_measurement` with `KERAS_BACKEND=tensorflow`)."""

import keras
import numpy as np

CONFIG = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, hidden_act="gelu", initializer_range=0.02, type_vocab_size=2,
              num_hidden_groups=1, inner_group_num=1, down_scale_factor=1)
KINDS = ("pretrainer_lamb", "classifier_lora_adamw")


def build(kind):
    """`(model, optimizer)` of `kind`, the optimizer built on the model's trainable variables."""
    import albert_tf
    from albert_tf.training import optimization

    config = albert_tf.AlbertConfig.from_dict(CONFIG)
    if kind == "pretrainer_lamb":
        model = albert_tf.AlbertPretrainer(config)
        optimizer = optimization.create_optimizer(1e-3, 10, 2, optimizer="lamb")
    else:
        model = albert_tf.AlbertClassifier(config, num_labels=3)
        model.enable_lora(2, target_names=("query", "value", "ffn"))
        optimizer = optimization.create_optimizer(1e-3, 10, 2, optimizer="adamw")
    optimizer.build(model.trainable_variables)
    return model, optimizer


def fill(model, optimizer, offset):
    """Gives every variable a value of its own: `offset + 0.001 * position` (ints: `offset + position`)."""
    for i, variable in enumerate(list(model.variables) + list(optimizer.variables)):
        dtype = keras.backend.standardize_dtype(variable.dtype)
        if "int" in dtype:
            value = np.full(variable.shape, int(offset) + i, dtype)
        else:
            value = np.full(variable.shape, offset + 0.001 * i, dtype)
        variable.assign(value)


def tf_write(kind, prefix, offset):
    """Under the TensorFlow backend: `kind` filled with `offset`, written the TensorFlow runners' way."""
    import tensorflow as tf
    from albert_tf.training import loop

    model, optimizer = build(kind)
    fill(model, optimizer, offset)
    return tf.train.Checkpoint(**loop.checkpoint_objects(model), optimizer=optimizer).write(prefix)


def tf_restore(kind, prefix):
    """Under the TensorFlow backend: restores `prefix` the TensorFlow runners' way; returns `{key: value}` read back
    from the restored objects (a checkpoint of them written next to `prefix`)."""
    import tensorflow as tf
    from albert_tf.training import loop

    model, optimizer = build(kind)
    checkpoint = tf.train.Checkpoint(**loop.checkpoint_objects(model), optimizer=optimizer)
    checkpoint.restore(prefix).expect_partial()
    return checkpoint.write(prefix + "-tf")
