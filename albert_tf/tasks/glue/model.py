"""`AlbertClassifier`: the GLUE sentence(-pair) classification / regression model (`classifier_utils.create_model`)."""

import keras

from albert_tf.errors import InputError
from albert_tf.layers.heads import argmax
from albert_tf.models.base import PretrainedMixin, build_encoder, check_dropout_rate, check_positive_int


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(PretrainedMixin, keras.Model):
    """ALBERT with the original GLUE head: `pooled_output` -> dropout -> `output_weights`/`output_bias`.

    The dropout rate is the original's fixed 0.1 (independent of the config's dropout), applied only with
    `training=True`. `num_labels=1` is the STS-B regression head.

    Outputs (float32) for classification: `logits [batch, num_labels]`, `probabilities` (softmax) and
    `predictions` (int32 argmax) `[batch]`. For regression, as the original: `logits [batch]` (squeezed),
    `probabilities [batch, 1]` (the raw value) and `predictions [batch]` (the value).

    Attributes used by the checkpoint table: `encoder` (`AlbertModel`), `classifier_head`
    (`AlbertOutputProjection(num_labels)`: TF1 root-scope `output_weights [num_labels, H]`, `output_bias`).

    Args:
        config: `AlbertConfig`, dict or JSON path; or pass `encoder=` an existing `AlbertModel`.
        num_labels: int, number of classes; 1 for regression.
        encoder: optional `AlbertModel` to put the head on.
        dropout_rate: float, dropout on the pooled output during training.
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config` (an `encoder` passed
            in keeps its own).
        preprocessor: optional `albert_tf.AlbertPreprocessor`: the model then also takes raw strings, or pairs
            as a tuple `(texts_a, texts_b)`, in `fit`, `evaluate`, `predict` and calls (see `PretrainedMixin`).
        labels: optional names of the `num_labels` classes (e.g. a Hugging Face `config.json`'s `id2label`, which
            `from_pretrained` passes); None when unnamed.

    `compile()` defaults: `SparseCategoricalCrossentropy(from_logits=True)` on the logits (the original's mean
    cross entropy) and accuracy, or `MeanSquaredError` for regression; AdamW with the original's schedule and
    the MNLI settings of `run_glue.sh` (peak 3e-5, 10000 steps, 1000 warm-up steps).
    """

    _CONFIG_ARGUMENTS = ("num_labels", "labels", "dropout_rate", "recompute")

    def __init__(self, config=None, num_labels=2, encoder=None, dropout_rate=0.1, recompute=False, preprocessor=None,
                 labels=None, **kwargs):
        kwargs.setdefault("name", "albert_classifier")
        check_positive_int("num_labels", num_labels)
        check_dropout_rate("dropout_rate", dropout_rate)
        self.init_encoder(build_encoder(config, encoder, recompute, kwargs.get("dtype"),
                                        "Pass `config` or `encoder` to AlbertClassifier."), **kwargs)
        if labels is not None and len(labels) != num_labels:
            raise InputError(f"`labels` must name the {num_labels} labels. Received {len(labels)}: {labels!r}.")
        self.num_labels = num_labels
        self.labels = None if labels is None else [str(label) for label in labels]
        self.dropout_rate = dropout_rate
        # Dropout is `head_dropout` in `call`, as the original, not a Keras `Dropout` layer (see `head_dropout`).
        self.classifier_head = self.output_projection(num_labels, "classifier_head")
        self.finish_init(preprocessor, dropout_rate)

    @property
    def is_regression(self):
        return self.num_labels == 1

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        pooled = self.encoder(inputs, training=training)["pooled_output"]     # [batch, H]
        pooled = self.head_dropout(pooled, self.dropout_rate, training)
        logits = self.classifier_head(pooled)                                 # [batch, num_labels] float32
        if self.is_regression:
            value = keras.ops.squeeze(logits, -1)                             # [batch]
            return {"logits": value, "probabilities": logits, "predictions": value}
        probabilities = keras.ops.softmax(logits, axis=-1)
        return {"logits": logits, "probabilities": probabilities,
                "predictions": argmax(probabilities)}

    def default_loss(self):
        if self.is_regression:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [] if self.is_regression else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def loss_output(self, outputs):
        return outputs["logits"] if isinstance(outputs, dict) else outputs


def classifier_loss(outputs, label_ids, num_labels):
    """Per-example loss of the original `create_model`: softmax cross entropy, or `(value - label)^2`.

    Args:
        outputs: the model's output dict.
        label_ids: `[batch]` int class ids, or float targets for regression.
        num_labels: int, the model's `num_labels`.

    Returns:
        float32 `[batch]` per-example loss (the training loss is its mean).
    """
    ops = keras.ops
    if num_labels == 1:
        return ops.square(ops.cast(outputs["logits"], "float32") - ops.cast(label_ids, "float32"))
    log_probs = ops.log_softmax(ops.cast(outputs["logits"], "float32"), axis=-1)
    one_hot = ops.one_hot(ops.cast(label_ids, "int32"), num_labels, dtype="float32")
    return -ops.sum(one_hot * log_probs, axis=-1)
