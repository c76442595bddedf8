"""Checkpoints as the original scripts leave them in `--output_dir`, and the same weights in our format.

The original TF1 code saves every variable under its TF1 name plus `global_step` and the optimizer's slots
(`<name>/adam_m`, `<name>/adam_v` for AdamW; `<name>/lamb_m`, `<name>/lamb_v` for LAMB). The names are written
out here literally, as the original's `modeling.py`, `run_pretraining.py`, `classifier_utils.py`,
`squad_utils.py` and `race_utils.py` create them (original-release.md, section 4), not taken from the name table
the tests check.
"""

import os
import re

import numpy as np
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.training import loop


def _dense(scope, layer, bias=True):
    return [(f"{scope}/kernel", layer.kernel)] + ([(f"{scope}/bias", layer.bias)] if bias else [])


def _layer_norm(scope, layer):
    return [(f"{scope}/beta", layer.beta), (f"{scope}/gamma", layer.gamma)]


def _projection(scope, layer):
    return [(f"{scope}output_weights", layer.output_weights), (f"{scope}output_bias", layer.output_bias)]


def _encoder_variables(encoder):
    """`modeling.AlbertModel`'s variables: embeddings, the projection, each shared block, the pooler."""
    emb = encoder.embeddings
    out = [("bert/embeddings/word_embeddings", emb.word_embeddings),
           ("bert/embeddings/token_type_embeddings", emb.token_type_embeddings),
           ("bert/embeddings/position_embeddings", emb.position_embeddings)]
    out += _layer_norm("bert/embeddings/LayerNorm", emb.layer_norm)
    if encoder.embedding_projection is not None:
        out += _dense("bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection)
    for g, group in enumerate(encoder.groups):
        for k, block in enumerate(group):
            scope = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
            out += _dense(f"{scope}/attention_1/self/query", block.attention.query)
            out += _dense(f"{scope}/attention_1/self/key", block.attention.key)
            out += _dense(f"{scope}/attention_1/self/value", block.attention.value)
            out += _dense(f"{scope}/attention_1/output/dense", block.attention.output_dense)
            out += _layer_norm(f"{scope}/LayerNorm", block.attention_layer_norm)
            out += _dense(f"{scope}/ffn_1/intermediate/dense", block.ffn)
            out += _dense(f"{scope}/ffn_1/intermediate/output/dense", block.ffn_output)
            out += _layer_norm(f"{scope}/LayerNorm_1", block.output_layer_norm)
    return out + _dense("bert/pooler/dense", encoder.pooler)


def _head_variables(model):
    """The task script's head variables of `model`."""
    if isinstance(model, AlbertPretrainer):   # run_pretraining.py: get_masked_lm_output, get_sentence_order_output
        return (_dense("cls/predictions/transform/dense", model.mlm_head.dense)
                + _layer_norm("cls/predictions/transform/LayerNorm", model.mlm_head.layer_norm)
                + [("cls/predictions/output_bias", model.mlm_head.output_bias)]
                + _projection("cls/seq_relationship/", model.sop_head))
    if isinstance(model, AlbertClassifier):   # classifier_utils.create_model
        return _projection("", model.classifier_head)
    if isinstance(model, AlbertSquadV1):      # squad_utils.create_v1_model
        return _projection("cls/squad/", model.squad_head)
    if isinstance(model, AlbertSquadV2):      # squad_utils.create_v2_model
        return (_dense("start_logits/dense", model.start_dense) + _dense("end_logits/dense_0", model.end_dense_0)
                + _layer_norm("end_logits/LayerNorm", model.end_layer_norm)
                + _dense("end_logits/dense_1", model.end_dense_1)
                + _dense("answer_class/dense_0", model.answer_class_dense_0)
                + _dense("answer_class/dense_1", model.answer_class_dense_1, bias=False))
    if isinstance(model, AlbertRace):         # race_utils.create_model
        return _projection("", model.race_head)
    if isinstance(model, AlbertTokenClassifier):   # not in the original: its own scope (tasks/ner/model.py)
        return _projection("token_classification/", model.token_classifier_head)
    return []


def original_variables(model, extra=()):
    """`[(original TF1 name, Keras variable)]` of every weight of `model`, the names written literally; `extra`
    adds `(name, variable)` pairs of a head the original scripts do not have (a test's own head)."""
    variables = _encoder_variables(getattr(model, "encoder", model)) + _head_variables(model) + list(extra)
    assert len({id(v) for _, v in variables}) == len(model.weights), "a weight without an original name"
    return variables


def original_tensors(model, extra=()):
    """`(original TF1 name, float32 value)` of every weight of `model` (see `original_variables`)."""
    for name, variable in original_variables(model, extra):
        yield name, tf.cast(tf.convert_to_tensor(variable), tf.float32)

MAX_ERROR_CHARS = 1500


def save_original_checkpoint(model, prefix, slots=("adam_m", "adam_v"), global_step=300, extra=()):
    """Writes `model`'s weights as the original's `prefix` checkpoint, with optimizer slots and `global_step`
    (`extra`: see `original_variables`)."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    names, tensors = [], []
    for name, value in original_tensors(model, extra):
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


def write_google_checkpoint(weights, prefix, name_prefix="", optimizer_slots=True, state_file=False):
    """Writes `weights` as the original TF1 code would: `tf.compat.v1` variables, `Saver`, slots, global_step."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    rng = np.random.default_rng(7)
    with tf.Graph().as_default():
        for name, value in weights.items():
            tf.compat.v1.Variable(value, name=name_prefix + name)
            if optimizer_slots:
                for slot in ("adam_m", "adam_v"):
                    tf.compat.v1.Variable(rng.normal(size=value.shape).astype(np.float32),
                                          name=f"{name_prefix}{name}/{slot}")
        global_step = tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(global_step.assign(1234))
            saver.save(sess, prefix, write_meta_graph=False)
    if not state_file:  # Google's tarballs ship no `checkpoint` file (the README's download list).
        os.remove(os.path.join(os.path.dirname(prefix), "checkpoint"))
    return prefix
