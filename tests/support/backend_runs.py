"""Tiny training runs through `albert_tf.training.loop.run_training` under this process's Keras backend: the
behaviour tests call them the same way under TensorFlow (the newest set's tiers) and under JAX (the backends
tier, KERAS_BACKEND=jax), so that each behaviour is checked on both backends by one test file."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

CONFIG = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              num_hidden_groups=1, inner_group_num=1, hidden_act="gelu", intermediate_size=32,
              max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              type_vocab_size=2)
BATCH = 8


def backend():
    return keras.backend.backend()


def devices():
    """The run's devices: the default `tf.distribute` strategy, or under JAX every device (`jax_devices`)."""
    if backend() == "jax":
        from albert_tf.training import jax_distribution

        return jax_distribution.jax_devices()
    return tf.distribute.get_strategy()


def features(rows=64):
    rng = np.random.RandomState(0)
    return {"input_ids": rng.randint(5, 50, size=(rows, 16)).astype(np.int32),
            "input_mask": np.ones((rows, 16), np.int32), "segment_ids": np.zeros((rows, 16), np.int32),
            "label_ids": rng.randint(0, 2, size=(rows,)).astype(np.int32)}


def classifier_loss(model, batch, training):
    from albert_tf.tasks.glue.model import classifier_loss as loss

    outputs = model(batch, training=training)
    return keras.ops.mean(loss(outputs, batch["label_ids"], 2)), {}


def write_config(path, **changes):
    with open(path, "w") as f:
        json.dump(dict(CONFIG, **changes), f)
    return str(path)


def classifier(config=None, lora_rank=0):
    import albert_tf

    model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(dict(CONFIG, **(config or {}))),
                                       num_labels=2, dropout_rate=0.0)
    if lora_rank:
        model.enable_lora(lora_rank)
    return model


def train_classifier(model_dir, steps=6, every=2, per_loop=2, keep=5, config=None, lora_rank=0, optimizer=None,
                     callback=None, accumulation=1, schedule=None):
    """`run_training` of a tiny classifier (dropout off, seed 1, AdamW) for `steps` steps in `model_dir`, a
    checkpoint every `every`, the learning rate's schedule over `schedule` steps (default `steps`);
    `optimizer(inner)` may wrap the optimizer (a loss scaler). Returns `(result, model, optimizer)`."""
    from albert_tf.training import loop, optimization

    keras.utils.set_random_seed(1)
    where = devices()
    with where.scope():
        model = classifier(config, lora_rank)
        opt = optimization.create_optimizer(1e-2, schedule or steps, 1, optimizer="adamw")
        if optimizer is not None:
            opt = optimizer(opt)
    rows = features()
    per_replica = (BATCH if backend() == "jax" else BATCH // where.num_replicas_in_sync) // accumulation

    def dataset_fn(input_context, start_batch):
        del input_context
        return tf.data.Dataset.from_tensor_slices(rows).repeat().batch(per_replica).skip(start_batch)

    result = loop.run_training(model, opt, classifier_loss, dataset_fn, where, str(model_dir), steps,
                               iterations_per_loop=per_loop, save_checkpoints_steps=every, keep_checkpoint_max=keep,
                               gradient_accumulation_steps=accumulation, positional_input=True,
                               loop_callback=callback)
    return result, model, opt


def weights(model):
    from albert_tf.checkpoints import object_graph

    return [object_graph.host_value(v) for v in model.weights]


def files(model_dir):
    return sorted(os.listdir(model_dir))


def host(variable):
    from albert_tf.checkpoints import object_graph

    return object_graph.host_value(variable)


def listing(model_dir, steps=2):
    """`train_classifier` for `steps` steps in `model_dir` (under this process's backend); returns `{key: [shape,
    dtype]}` of `model.ckpt-<steps>`, the object graph left out."""
    train_classifier(model_dir, steps=steps)
    prefix = os.path.join(str(model_dir), f"model.ckpt-{steps}")
    dtypes = tf.train.load_checkpoint(prefix).get_variable_to_dtype_map()
    return {key: [list(shape), dtypes[key].name] for key, shape in tf.train.list_variables(prefix)
            if key != "_CHECKPOINTABLE_OBJECT_GRAPH"}
