"""`AlbertRace`: the multiple-choice model of the original `race_utils.create_model`."""

import keras

from albert_tf.config import TOKEN_INPUTS
from albert_tf.errors import InputError
from albert_tf.layers.heads import argmax
from albert_tf.models.base import PretrainedMixin, build_encoder
from albert_tf.tasks.race.data import RACE_NUM_CHOICES


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertRace(PretrainedMixin, keras.Model):
    """ALBERT scoring each (article, question + option) pair with one unit, softmax over the choices.

    Inputs: a dict of int32 `[batch, choices, seq]` tensors `input_ids`, `input_mask`, `segment_ids`; RACE has 4
    choices (its data, serving signature and export), and any number is taken, in calls, losses and `fit`, as
    transformers' `AlbertForMultipleChoice`. The choices are folded into the batch (`[batch * choices, seq]`), encoded, and the
    pooled output goes through dropout (`dropout_prob`, training only) and the 1-unit scorer `race_head` (TF1
    `output_weights [1, H]`, `output_bias [1]` at the root scope). Outputs, float32 except `predictions`:
    `logits [batch, choices]`, `probabilities [batch, choices]` (softmax), `predictions [batch]` int32 (argmax).

    Attributes used by the checkpoint table: `encoder` (`AlbertModel`), `race_head` (`AlbertOutputProjection(1)`).

    Args:
        config: `AlbertConfig`, dict or path of an `albert_config.json`; or pass `encoder=`.
        encoder: an existing `AlbertModel` (its config is used).
        dropout_prob: float, dropout on the pooled output while training (the original's `--dropout_prob`, 0.1).
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config` (an `encoder` passed
            in keeps its own).
        preprocessor: optional `albert_tf.AlbertPreprocessor`: the model then also takes raw text, a dict of
            `article`, `question` `[batch]` and `options` `[batch, 4]` strings, in `fit`, `evaluate`, `predict`
            and calls (see `PretrainedMixin`).

    `compile()` defaults: `SparseCategoricalCrossentropy(from_logits=True)` on the logits (the original's loss)
    and accuracy; AdamW with the original's schedule and the settings of the README's RACE command (peak 1e-5,
    12000 steps, 1000 warm-up steps).
    """

    _CONFIG_ARGUMENTS = ("dropout_prob", "recompute")
    _PREPROCESS_MODE = "race"
    _TRAINING_DEFAULTS = dict(optimizer="adamw", learning_rate=1e-5, num_train_steps=12000, num_warmup_steps=1000)

    def __init__(self, config=None, encoder=None, dropout_prob=0.1, recompute=False, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_race")
        encoder = build_encoder(config, encoder, recompute, kwargs.get("dtype"),
                                "Pass `config` or `encoder` to AlbertRace. Received neither.")
        if not 0.0 <= float(dropout_prob) < 1.0:
            raise InputError(f"`dropout_prob` must be in [0, 1). Received: `dropout_prob={dropout_prob}`.")
        self.init_encoder(encoder, **kwargs)
        self.dropout_prob = float(dropout_prob)
        self.num_choices = RACE_NUM_CHOICES   # RACE's; the data and the serving signature use it.

        # === Layers ===
        # Dropout is `head_dropout` in `call` (as the original), not a Keras `Dropout` layer (see `head_dropout`).
        self.race_head = self.output_projection(1, "race_head")
        self.finish_init(preprocessor, self.dropout_prob)

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        if not isinstance(inputs, dict) or "input_ids" not in inputs:
            raise TypeError("AlbertRace inputs must be a dict with `input_ids`, `input_mask`, `segment_ids`. "
                            f"Received: {type(inputs).__name__}.")
        ops = keras.ops
        input_ids = ops.convert_to_tensor(inputs["input_ids"])
        if len(input_ids.shape) != 3:
            raise InputError("AlbertRace `input_ids` must be `[batch, choices, seq]` (RACE: 4 choices). "
                             f"Received shape: {input_ids.shape}.")
        seq_length = ops.shape(input_ids)[-1]
        num_choices = input_ids.shape[1] or ops.shape(input_ids)[1]   # Static when known (RACE's signature: 4).
        flat = {}
        for name in TOKEN_INPUTS:
            if inputs.get(name) is not None:
                flat[name] = ops.reshape(ops.cast(inputs[name], "int32"), [-1, seq_length])  # [batch*4, seq]
        pooled = self.encoder(flat, training=training)["pooled_output"]                     # [batch*4, H]
        pooled = self.head_dropout(pooled, self.dropout_prob, training)
        scores = self.race_head(pooled)                                                      # [batch*c, 1]
        logits = ops.reshape(scores, [-1, num_choices])                                      # [batch, c]
        probabilities = ops.softmax(logits, axis=-1)
        return {
            "logits": logits,
            "probabilities": probabilities,
            "predictions": argmax(probabilities),
        }

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def loss_output(self, outputs):
        return outputs["logits"] if isinstance(outputs, dict) else outputs


def race_loss(logits, label_ids):
    """The original's loss: `per_example_loss = -sum(one_hot(label) * log_softmax(logits))`, `loss = mean`.

    Args:
        logits: float `[batch, choices]` (RACE: 4 choices; any number is scored).
        label_ids: int `[batch]`.

    Returns:
        `(loss, per_example_loss)`: a scalar and `[batch]`, float32.
    """
    ops = keras.ops
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)                         # [batch, c]
    labels = ops.reshape(ops.cast(label_ids, "int32"), [-1, 1])
    # The label's log-probability: the original's sum over a one-hot row, for any number of choices.
    per_example_loss = -ops.take_along_axis(log_probs, labels, axis=-1)[:, 0]                   # [batch]
    return ops.mean(per_example_loss), per_example_loss
