"""`AlbertPretrainer`: the encoder with the original MLM and SOP heads (`run_pretraining.py`)."""

import keras

from albert_tf.errors import InputError
from albert_tf.layers.heads import AlbertMaskedLMHead
from albert_tf.models.base import PretrainedMixin, build_encoder


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(PretrainedMixin, keras.Model):
    """ALBERT with `cls/predictions` (tied MLM) and `cls/seq_relationship` (SOP) heads.

    Inputs: the encoder's dict plus `masked_lm_positions` int32 `[batch, P]`. Outputs: the encoder's outputs
    plus `mlm_logits [batch, P, V]` and `sop_logits [batch, 2]` (label 0 = in order, 1 = swapped), float32.

    Attributes used by the checkpoint table: `encoder` (`AlbertModel`), `mlm_head`
    (`AlbertMaskedLMHead`), `sop_head` (`AlbertOutputProjection` with `[2, H]` weights).

    Args:
        config: `AlbertConfig`, dict or JSON path; or pass `encoder=` an existing `AlbertModel`.
        encoder: optional `AlbertModel` to put the heads on.
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config` (an `encoder` passed
            in keeps its own).
        preprocessor: optional `albert_tf.AlbertPreprocessor`: the model then also takes raw strings (or pairs
            as a tuple of two lists) in which each literal `[MASK]` is predicted; `predict` returns
            `mlm_logits [batch, P, V]` for the first `max_predictions_per_seq` masks with the packed
            `input_ids`, `masked_lm_positions` and `masked_lm_weights` (1 on real masks).

    `compile()` defaults: the original's `total_loss` (`pretraining_loss`; `y` a dict of `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels`, and `masked_lm_positions` among the inputs) and LAMB with the
    original's schedule and the settings of its README (peak 0.00176, 125000 steps, 3125 warm-up steps).
    """

    _CONFIG_ARGUMENTS = ("recompute",)
    _PREPROCESS_MODE = "masked"
    _PREDICT_PASSTHROUGH = ("input_ids", "masked_lm_positions", "masked_lm_weights")
    _TRAINING_DEFAULTS = dict(optimizer="lamb", learning_rate=0.00176, num_train_steps=125000,
                              num_warmup_steps=3125)

    def __init__(self, config=None, encoder=None, recompute=False, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_pretrainer")
        self.init_encoder(build_encoder(config, encoder, recompute, kwargs.get("dtype"),
                                        "Pass `config` or `encoder` to AlbertPretrainer."), **kwargs)
        config = self.config
        self.mlm_head = AlbertMaskedLMHead(config.vocab_size, config.embedding_size, config.hidden_size,
                                           config.hidden_act, config.initializer_range,
                                           dtype=self.dtype_policy, name="predictions")
        self.mlm_head.build()
        self.sop_head = self.output_projection(2, "seq_relationship")
        self.finish_init(preprocessor)

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        outputs = dict(self.encoder(inputs, training=training))
        positions = inputs.get("masked_lm_positions")
        if positions is not None:
            outputs["mlm_logits"] = self.mlm_head(outputs["sequence_output"], positions,
                                                  self.encoder.embedding_table)
        outputs["sop_logits"] = self.sop_head(outputs["pooled_output"])
        return outputs

    def task_loss(self, x, y, outputs, sample_weight=None):
        if not isinstance(y, dict):
            raise InputError("The pretraining loss needs `y` as a dict of `masked_lm_ids`, `masked_lm_weights` and "
                             f"`next_sentence_labels`. Received: {type(y).__name__}.")
        return pretraining_loss(outputs, y)[0]


def pretraining_terms(outputs, features):
    """The per-position terms of the original's pretraining loss and metrics (`run_pretraining.py`).

    Returns a dict: `mlm_log_probs` `[batch, P, V]`, `mlm_ids` and `mlm_weights` `[batch, P]`, `mlm_nll`
    `[batch, P]` (the NLL of each masked position), `sop_log_probs` `[batch, 2]`, `sop_labels` and `sop_nll`
    `[batch]`; `features` holds `masked_lm_ids`, `masked_lm_weights` `[batch, P]` and `next_sentence_labels`
    `[batch]` or `[batch, 1]`.
    """
    ops = keras.ops
    log_probs = ops.log_softmax(ops.cast(outputs["mlm_logits"], "float32"), axis=-1)
    ids = ops.cast(features["masked_lm_ids"], "int32")
    labels = ops.reshape(ops.cast(features["next_sentence_labels"], "int32"), [-1])
    sop_log_probs = ops.log_softmax(ops.cast(outputs["sop_logits"], "float32"), axis=-1)
    return {"mlm_log_probs": log_probs, "mlm_ids": ids,
            "mlm_weights": ops.cast(features["masked_lm_weights"], "float32"),
            "mlm_nll": -ops.take_along_axis(log_probs, ids[..., None], axis=-1)[..., 0],
            "sop_log_probs": sop_log_probs, "sop_labels": labels,
            "sop_nll": -ops.take_along_axis(sop_log_probs, labels[:, None], axis=-1)[:, 0]}


def pretraining_loss(outputs, features, terms=None, sentence_loss_weight=1.0):
    """The original `total_loss` (`model_fn` in `run_pretraining.py`): weighted MLM NLL with the 1e-5
    guard + mean SOP CE.

    Returns `(total_loss, masked_lm_loss, sentence_order_loss)`, all scalars; `features` as
    `pretraining_terms`, whose result `terms` may be passed in when already computed. `sentence_loss_weight`
    scales the sentence-level term in `total_loss`: 1.0 (the default) is the original's `masked_lm_loss +
    sentence_order_loss`; 0.0 trains on the MLM loss alone (the "none" row of the paper's Table 5), the SOP
    head and the pooler then get no gradient. `sentence_order_loss` is returned unscaled either way.
    """
    terms = pretraining_terms(outputs, features) if terms is None else terms
    weights = terms["mlm_weights"]
    ops = keras.ops
    masked_lm_loss = ops.sum(weights * terms["mlm_nll"]) / (ops.sum(weights) + 1e-5)
    sentence_order_loss = ops.mean(terms["sop_nll"])
    if sentence_loss_weight == 1.0:   # the original's graph, op for op
        return masked_lm_loss + sentence_order_loss, masked_lm_loss, sentence_order_loss
    return masked_lm_loss + sentence_loss_weight * sentence_order_loss, masked_lm_loss, sentence_order_loss
