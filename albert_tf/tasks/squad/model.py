"""SQuAD task models: the v1 span head and the v2 XLNet-style head (the original `squad_utils.create_v1_model`
and `create_v2_model`)."""

import keras
from keras import ops

from albert_tf.errors import InputError
from albert_tf.layers.embeddings import truncated_normal
from albert_tf.layers.heads import gather_positions
from albert_tf.models.albert_model import AlbertModel
from albert_tf.models.base import PretrainedMixin, build_encoder, check_dropout_rate, check_positive_int


def _encoder(config, encoder, dtype, recompute):
    """`build_encoder`, and a `TypeError` for an `encoder` that is not an `AlbertModel`."""
    encoder = build_encoder(config, encoder, recompute, dtype, "Pass `config` or `encoder`.")
    if not isinstance(encoder, AlbertModel):
        raise TypeError(f"`encoder` must be an AlbertModel. Received: {type(encoder).__name__}.")
    return encoder


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV1(PretrainedMixin, keras.Model):
    """ALBERT with the SQuAD 1.1 span head `cls/squad/output_weights [2, H]` (`squad_utils.create_v1_model`).

    Inputs: the encoder's dict. Outputs: `start_logits`, `end_logits` float32 `[batch, seq]` (raw logits, no
    masking; the original calls them `start_log_prob`/`end_log_prob` in its predictions) and the encoder's
    outputs.

    Attributes: `encoder` (`AlbertModel`), `squad_head` (`AlbertOutputProjection(2)`).

    Args:
        config: `AlbertConfig`, dict or JSON path; or pass `encoder=` an existing `AlbertModel`.
        encoder: optional `AlbertModel`.
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config` (an `encoder` passed
            in keeps its own).
        preprocessor: optional `albert_tf.AlbertPreprocessor`: the model then also takes raw text, a dict of
            `question` and `context` strings `[batch]`, in `evaluate`, `predict` and calls, packed as the first
            document span of `run_squad.py` (longer contexts need its doc-stride windows, outside the model);
            `predict` adds the packed `input_ids` and `p_mask`.

    `compile()` defaults: the original's loss (`squad_v1_loss`; `y` a dict of `start_positions`, `end_positions`)
    and AdamW with the original's schedule and the paper's SQuAD 1.1 settings (peak 5e-5, 3649
    steps, 365 warm-up steps).
    """

    _CONFIG_ARGUMENTS = ("recompute",)
    _PREPROCESS_MODE = "squad"
    _PREDICT_PASSTHROUGH = ("input_ids", "p_mask")
    _TRAINING_DEFAULTS = dict(optimizer="adamw", learning_rate=5e-5, num_train_steps=3649, num_warmup_steps=365)

    def __init__(self, config=None, encoder=None, recompute=False, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_squad_v1")
        self.init_encoder(_encoder(config, encoder, kwargs.get("dtype"), recompute), **kwargs)
        self.squad_head = self.output_projection(2, "squad")
        self.finish_init(preprocessor)

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        outputs = dict(self.encoder(inputs, training=training))
        logits = self.squad_head(outputs["sequence_output"])                   # [batch, seq, 2]
        outputs["start_logits"] = logits[:, :, 0]
        outputs["end_logits"] = logits[:, :, 1]
        return outputs

    def task_loss(self, x, y, outputs, sample_weight=None):
        _check_targets(y, ("start_positions", "end_positions"))
        return squad_v1_loss(outputs, y)


def _check_targets(y, names):
    """InputError unless `y` is a dict holding `names` (the SQuAD training targets)."""
    if not isinstance(y, dict) or any(name not in y for name in names):
        received = sorted(y) if isinstance(y, dict) else type(y).__name__
        raise InputError(f"The SQuAD loss needs `y` as a dict of {', '.join(f'`{n}`' for n in names)}. "
                         f"Received: {received}.")


def _position_ce(log_probs, positions):
    """Mean over the batch of `-log_probs[b, positions[b]]` (the original's one-hot sum)."""
    positions = ops.reshape(ops.cast(positions, "int32"), [-1])
    return -ops.mean(ops.take_along_axis(log_probs, positions[:, None], axis=1))


def squad_v1_loss(outputs, features):
    """`(CE_start + CE_end) / 2` over raw logits (`v1_model_fn_builder`)."""
    start_log_probs = ops.log_softmax(ops.cast(outputs["start_logits"], "float32"), axis=-1)
    end_log_probs = ops.log_softmax(ops.cast(outputs["end_logits"], "float32"), axis=-1)
    return (_position_ce(start_log_probs, features["start_positions"])
            + _position_ce(end_log_probs, features["end_positions"])) / 2.0


def default_p_mask(input_mask, segment_ids):
    """`p_mask` of the `[CLS] query [SEP] doc [SEP]` layout from the mask and segments.

    0 for `[CLS]` and the doc tokens (segment 1, real, before the final `[SEP]`), 1 elsewhere; this equals the
    `p_mask` written by `albert_tf.tasks.squad.data` and lets serving callers pass only the three encoder inputs.
    """
    input_mask = ops.cast(input_mask, "int32")
    segment_ids = ops.cast(segment_ids, "int32")
    # expand_dims here and below, not `[None, :]`: LiteRT converts no axis-adding slice of unknown shape.
    positions = ops.expand_dims(ops.arange(ops.shape(input_mask)[1], dtype="int32"), 0)  # [1, seq]
    last_real = ops.sum(input_mask, axis=1, keepdims=True) - 1               # [batch, 1]
    is_doc = ops.logical_and(ops.logical_and(ops.equal(segment_ids, 1), ops.equal(input_mask, 1)),
                             ops.less(positions, last_real))
    is_cls = ops.equal(positions, 0)
    return 1 - ops.cast(ops.logical_or(is_doc, is_cls), "int32")


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV2(PretrainedMixin, keras.Model):
    """ALBERT with the XLNet-style SQuAD 2.0 head of `squad_utils.create_v2_model`.

    Start logits `Dense(1)`, masked by `p_mask` (`logits * (1 - p_mask) - 1e30 * p_mask`), log-softmax. End
    logits are conditioned on a start: `Dense(H, tanh)` over `[token, start token]` -> LayerNorm -> `Dense(1)`,
    masked, log-softmax. With `start_positions` in the inputs (training) the gold start is used; without, the
    `start_n_top` best starts are expanded to their `end_n_top` best ends. The answer class
    `Dense(H, tanh)` over `[expected start feature, [CLS] feature]` -> dropout -> `Dense(1, no bias)` gives
    `cls_logits` (larger = more likely unanswerable).

    Inputs: the encoder's dict plus `p_mask` int `[batch, seq]` (1 = cannot be an answer; derived from
    `input_mask`/`segment_ids` by `default_p_mask` when absent) and optionally `start_positions` `[batch]`.
    Outputs (float32, index tensors int32): with `start_positions`: `start_log_probs`, `end_log_probs`
    `[batch, seq]`; without: `start_top_log_probs`, `start_top_index` `[batch, start_n_top]`,
    `end_top_log_probs`, `end_top_index` `[batch, start_n_top * end_n_top]` (entry `i * end_n_top + j` is the
    j-th end of the i-th start); always `cls_logits` `[batch]` and the encoder's outputs.

    Attributes (the TF1 names of `squad_utils.create_v2_model`): `encoder`, `start_dense`
    (`start_logits/dense`), `end_dense_0` (`end_logits/dense_0`), `end_layer_norm` (`end_logits/LayerNorm`),
    `end_dense_1` (`end_logits/dense_1`), `answer_class_dense_0` (`answer_class/dense_0`),
    `answer_class_dense_1` (`answer_class/dense_1`).

    Args:
        config: `AlbertConfig`, dict or JSON path; or pass `encoder=`.
        encoder: optional `AlbertModel`.
        start_n_top: int, beam size for starts at inference.
        end_n_top: int, beam size for ends per start at inference.
        dropout_prob: float, dropout in the answer-class head (training only).
        recompute: bool, `AlbertModel`'s `recompute` for the encoder built from `config` (an `encoder` passed
            in keeps its own).
        preprocessor: optional `albert_tf.AlbertPreprocessor`, as `AlbertSquadV1`'s (raw `question` and
            `context` strings, packed as the first document span of `run_squad.py`).

    `compile()` defaults: the original's loss (`squad_v2_loss`; `y` a dict of `start_positions`, `end_positions`, `is_impossible`; training also needs `start_positions` among the inputs)
    and AdamW with the original's schedule and the paper's SQuAD 2.0 settings (peak 3e-5, 8144
    steps, 814 warm-up steps).
    """

    _CONFIG_ARGUMENTS = ("start_n_top", "end_n_top", "dropout_prob", "recompute")
    _PREPROCESS_MODE = "squad"
    _PREDICT_PASSTHROUGH = ("input_ids", "p_mask")
    _TRAINING_DEFAULTS = dict(optimizer="adamw", learning_rate=3e-5, num_train_steps=8144, num_warmup_steps=814)

    def __init__(self, config=None, encoder=None, start_n_top=5, end_n_top=5, dropout_prob=0.1, recompute=False,
                 preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_squad_v2")
        encoder = _encoder(config, encoder, kwargs.get("dtype"), recompute)
        check_positive_int("start_n_top", start_n_top)
        check_positive_int("end_n_top", end_n_top)
        check_dropout_rate("dropout_prob", dropout_prob)
        self.init_encoder(encoder, **kwargs)
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_prob = dropout_prob
        hidden = self.config.hidden_size

        def dense(units, name, activation=None, use_bias=True):
            return keras.layers.Dense(units, activation=activation, use_bias=use_bias,
                                      kernel_initializer=truncated_normal(self.config.initializer_range),
                                      dtype=self.dtype_policy, name=name)

        self.start_dense = dense(1, "start_logits_dense")
        self.end_dense_0 = dense(hidden, "end_logits_dense_0", activation="tanh")
        self.end_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32",
                                                              name="end_logits_LayerNorm")
        self.end_dense_1 = dense(1, "end_logits_dense_1")
        self.answer_class_dense_0 = dense(hidden, "answer_class_dense_0", activation="tanh")
        self.answer_class_dense_1 = dense(1, "answer_class_dense_1", use_bias=False)
        self.answer_class_dropout = keras.layers.Dropout(dropout_prob, name="answer_class_dropout")

        self.start_dense.build((None, None, hidden))
        self.end_dense_0.build((None, None, 2 * hidden))
        self.end_layer_norm.build((None, None, hidden))
        self.end_dense_1.build((None, None, hidden))
        self.answer_class_dense_0.build((None, 2 * hidden))
        self.answer_class_dense_1.build((None, hidden))
        self.finish_init(preprocessor)

    def _end_log_probs(self, end_input, p_mask):
        """`end_input [..., seq, 2H]`, `p_mask [..., seq]` float -> masked end log-probs `[..., seq]`."""
        x = self.end_dense_0(end_input)
        x = self.end_layer_norm(ops.cast(x, "float32"))
        end_logits = ops.squeeze(ops.cast(self.end_dense_1(ops.cast(x, self.compute_dtype)), "float32"), -1)
        end_logits_masked = end_logits * (1.0 - p_mask) - 1e30 * p_mask
        return ops.log_softmax(end_logits_masked, axis=-1)

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        outputs = dict(self.encoder(inputs, training=training))
        sequence_output = outputs["sequence_output"]                           # [batch, seq, H]
        p_mask = inputs.get("p_mask")
        if p_mask is None:
            p_mask = default_p_mask(inputs.get("input_mask", ops.ones_like(inputs["input_ids"])),
                                    inputs.get("segment_ids", ops.zeros_like(inputs["input_ids"])))
        p_mask = ops.cast(p_mask, "float32")                                   # [batch, seq]
        seq_length = ops.shape(sequence_output)[1]

        start_logits = ops.squeeze(ops.cast(self.start_dense(sequence_output), "float32"), -1)  # [batch, seq]
        start_logits_masked = start_logits * (1.0 - p_mask) - 1e30 * p_mask
        start_log_probs = ops.log_softmax(start_logits_masked, axis=-1)

        start_positions = inputs.get("start_positions")
        if start_positions is not None:
            # Teacher forcing: end logits given the gold start.
            start_positions = ops.reshape(ops.cast(start_positions, "int32"), [-1, 1])
            start_features = gather_positions(sequence_output, start_positions)              # [batch, 1, H]
            start_features = ops.tile(start_features, [1, seq_length, 1])                    # [batch, seq, H]
            end_input = ops.concatenate([sequence_output, start_features], axis=-1)          # [batch, seq, 2H]
            outputs["start_log_probs"] = start_log_probs
            outputs["end_log_probs"] = self._end_log_probs(end_input, p_mask)
        else:
            # Beam: the start_n_top best starts, each with its end_n_top best ends.
            k = self.start_n_top
            start_top_log_probs, start_top_index = ops.top_k(start_log_probs, k=k)           # [batch, k]
            start_top_index = ops.cast(start_top_index, "int32")
            start_features = gather_positions(sequence_output, start_top_index)              # [batch, k, H]
            end_input = ops.concatenate([
                ops.tile(ops.expand_dims(sequence_output, 1), [1, k, 1, 1]),
                ops.tile(ops.expand_dims(start_features, 2), [1, 1, seq_length, 1])], axis=-1)  # [batch, k, seq, 2H]
            end_log_probs = self._end_log_probs(end_input, ops.expand_dims(p_mask, 1))     # [batch, k, seq]
            end_top_log_probs, end_top_index = ops.top_k(end_log_probs, k=self.end_n_top)  # [batch, k, k']
            end_top_index = ops.cast(end_top_index, "int32")
            outputs["start_log_probs"] = start_log_probs
            outputs["start_top_log_probs"] = start_top_log_probs
            outputs["start_top_index"] = start_top_index
            outputs["end_top_log_probs"] = ops.reshape(end_top_log_probs, [-1, k * self.end_n_top])
            outputs["end_top_index"] = ops.reshape(end_top_index, [-1, k * self.end_n_top])

        # Answer class from [CLS] and the expected start representation (no dependency on the end).
        cls_feature = ops.cast(sequence_output[:, 0], "float32")                              # [batch, H]
        start_p = ops.softmax(start_logits_masked, axis=-1)                                  # [batch, seq]
        start_feature = ops.einsum("bl,blh->bh", start_p, ops.cast(sequence_output, "float32"))
        ans_feature = ops.concatenate([start_feature, cls_feature], axis=-1)                  # [batch, 2H]
        ans_feature = self.answer_class_dense_0(ops.cast(ans_feature, self.compute_dtype))
        ans_feature = self.answer_class_dropout(ans_feature, training=training)
        outputs["cls_logits"] = ops.squeeze(ops.cast(self.answer_class_dense_1(ans_feature), "float32"), -1)
        return outputs

    def task_loss(self, x, y, outputs, sample_weight=None):
        _check_targets(y, ("start_positions", "end_positions", "is_impossible"))
        if "end_log_probs" not in outputs:
            raise InputError("Training AlbertSquadV2 needs `start_positions` among the inputs too (its end logits "
                             "are conditioned on the gold start).")
        return squad_v2_loss(outputs, y)[0]


def squad_v2_loss(outputs, features):
    """`0.5 * (CE_start + CE_end) + 0.5 * sigmoid_CE(cls_logits, is_impossible)` (`v2_model_fn_builder`).

    Returns `(total_loss, {"start_loss", "end_loss", "cls_loss"})`.
    """
    start_loss = _position_ce(outputs["start_log_probs"], features["start_positions"])
    end_loss = _position_ce(outputs["end_log_probs"], features["end_positions"])
    is_impossible = ops.cast(ops.reshape(features["is_impossible"], [-1]), "float32")
    logits = outputs["cls_logits"]
    # sigmoid cross entropy in the stable form of `tf.nn.sigmoid_cross_entropy_with_logits`.
    cls_loss = ops.mean(ops.relu(logits) - logits * is_impossible + ops.log1p(ops.exp(-ops.abs(logits))))
    total = (start_loss + end_loss) * 0.5 + cls_loss * 0.5
    return total, {"start_loss": start_loss, "end_loss": end_loss, "cls_loss": cls_loss}
