"""`AlbertTokenClassifier`: one label per token (NER-style tagging) on the ALBERT encoder.

The original release has no token-classification head; this one is the BERT-style tagger that transformers'
`AlbertForTokenClassification` also is: `sequence_output` -> dropout -> a dense layer to `num_labels` logits per
token. Its TF1 variables are `token_classification/output_weights [num_labels, H]` and
`token_classification/output_bias [num_labels]` (its own scope: a checkpoint holding them is told apart from a
GLUE classifier's root-scope `output_weights`), its transformers names `classifier.weight [num_labels, H]` and
`classifier.bias`.
"""

import os

import keras
import tensorflow as tf

from albert_tf.checkpoints import hf
from albert_tf.errors import InputError
from albert_tf.layers.heads import argmax
from albert_tf.models.base import PretrainedMixin, build_encoder, check_dropout_rate, check_positive_int
from albert_tf.config import TOKEN_INPUTS

HEAD_NAME = "token_classification"


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(PretrainedMixin, keras.Model):
    """ALBERT with a per-token head: `sequence_output` -> dropout -> `output_weights`/`output_bias`.

    Inputs: a dict of int32 `input_ids`, `input_mask`, `segment_ids` `[batch, seq]`, and optionally
    `word_positions [batch, words]` (each word's first-piece position, -1 for no word). Outputs:
    `logits [batch, seq, num_labels]` and `probabilities` (softmax), float32, `predictions [batch, seq]` int32
    (argmax); with `word_positions` also one tag per word (`word_outputs`): `word_tags` (the names of
    `labels`), `word_predictions`, `word_scores`.

    Attributes used by the checkpoint table: `encoder` (`AlbertModel`), `token_classifier_head`
    (`AlbertOutputProjection(num_labels)`).

    Args:
        config: `AlbertConfig`, dict or JSON path; or pass `encoder=` an existing `AlbertModel`.
        num_labels: int, number of tags.
        labels: optional sequence of `num_labels` tag names (default `LABEL_0`, `LABEL_1`, ...).
        encoder: optional `AlbertModel` to put the head on.
        dropout_rate: float, dropout on the sequence output during training.
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config`.
        preprocessor: optional `albert_tf.AlbertPreprocessor` (see `PretrainedMixin`).
    """

    _CONFIG_ARGUMENTS = ("num_labels", "labels", "dropout_rate", "recompute")
    _IGNORED_LABEL = -100

    def __init__(self, config=None, num_labels=2, labels=None, encoder=None, dropout_rate=0.1, recompute=False,
                 preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_token_classifier")
        check_positive_int("num_labels", num_labels)
        labels = [f"LABEL_{i}" for i in range(num_labels)] if labels is None else [str(x) for x in labels]
        if len(labels) != num_labels:
            raise InputError(f"`labels` must name the {num_labels} labels. Received {len(labels)}: {labels!r}.")
        check_dropout_rate("dropout_rate", dropout_rate)
        self.init_encoder(build_encoder(config, encoder, recompute, kwargs.get("dtype"),
                                        "Pass `config` or `encoder` to AlbertTokenClassifier."), **kwargs)
        self.num_labels = num_labels
        self.labels = labels
        self.dropout_rate = dropout_rate
        # Dropout is `head_dropout` in `call`, as the other heads, not a Keras `Dropout` layer.
        self.token_classifier_head = self.output_projection(num_labels, "token_classifier_head")
        self.finish_init(preprocessor, dropout_rate)

    @classmethod
    def from_pretrained(cls, path, config=None, preprocessor=None, **model_kwargs):
        """`PretrainedMixin.from_pretrained`; from a Hugging Face directory, `labels` (and `num_labels`) default to
        its `config.json` `id2label` when that names the tags."""
        if model_kwargs.get("labels") is None and isinstance(path, (str, os.PathLike)) and os.path.isdir(path) and (
                hf.is_hf_dir(path)):
            labels = hf.labels_of(path, model_kwargs.get("num_labels"))
            if labels is not None:
                model_kwargs.update(labels=labels, num_labels=len(labels))
        return super().from_pretrained(path, config=config, preprocessor=preprocessor, **model_kwargs)

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        token_inputs = {name: inputs[name] for name in TOKEN_INPUTS if inputs.get(name) is not None}
        sequence = self.encoder(token_inputs, training=training)["sequence_output"]   # [batch, seq, H]
        sequence = self.head_dropout(sequence, self.dropout_rate, training)
        logits = keras.ops.cast(self.token_classifier_head(sequence), "float32")    # [batch, seq, num_labels]
        probabilities = keras.ops.softmax(logits, axis=-1)
        outputs = {"logits": logits, "probabilities": probabilities,
                   "predictions": argmax(logits)}
        if inputs.get("word_positions") is not None:
            outputs.update(self.word_outputs(outputs, inputs["word_positions"]))
        return outputs

    def word_outputs(self, outputs, word_positions):
        """One tag per word from the per-token outputs, read at each word's first piece.

        Args:
            outputs: the per-token outputs of `call`.
            word_positions: int `[batch, words]`, each word's first-piece position, -1 for no word.

        Returns:
            `word_tags` tf.string `[batch, words]` (`""` for no word), `word_predictions` int32 (-1) and
            `word_scores` float32 (0), the probability of the tag.

        TensorFlow only (string tensors): the word outputs of the serving signatures and of `predict` on text,
        which run on TensorFlow; the per-token outputs above are `keras.ops` on every backend.
        """
        positions = tf.cast(word_positions, tf.int32)
        valid = positions >= 0
        at = tf.maximum(positions, 0)
        predictions = tf.where(valid, tf.gather(outputs["predictions"], at, batch_dims=1), -1)
        scores = tf.gather(tf.reduce_max(outputs["probabilities"], axis=-1), at, batch_dims=1)
        tags = tf.gather(tf.constant(self.labels), tf.maximum(predictions, 0))
        return {"word_tags": tf.where(valid, tags, ""), "word_predictions": predictions,
                "word_scores": tf.where(valid, scores, 0.0)}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-100)

    def loss_output(self, outputs):
        return outputs["logits"] if isinstance(outputs, dict) else outputs


def token_classification_loss(logits, label_ids, ignore_id=-100):
    """Mean softmax cross entropy over the positions whose label is not `ignore_id`.

    Args:
        logits: float `[batch, seq, num_labels]`.
        label_ids: int `[batch, seq]`, `ignore_id` where no label applies.

    Returns:
        `(loss, num_labelled)`: the float32 scalar mean (0 without labelled positions) and their count.
    """
    ops = keras.ops
    label_ids = ops.cast(label_ids, "int32")
    weights = ops.cast(ops.not_equal(label_ids, ignore_id), "float32")
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    picked = ops.take_along_axis(log_probs, ops.maximum(label_ids, 0)[..., None], axis=-1)[..., 0]
    per_token = -picked * weights
    count = ops.sum(weights)
    return ops.divide_no_nan(ops.sum(per_token), count), count
