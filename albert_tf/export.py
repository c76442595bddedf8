"""SavedModel export for TF Serving: token-id, serialized `tf.Example` and raw-text signatures.

`export_saved_model(model, export_dir, ...)` writes `<export_dir>/<version>/`, the layout TF Serving watches,
for any model of this package: `AlbertModel` (encoder), `AlbertPretrainer`, `AlbertClassifier`,
`AlbertSquadV1`, `AlbertSquadV2` and `AlbertRace`. Every export has three signatures:

* `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` `[batch, seq]` (`[batch, 4, seq]` for RACE;
  plus `mlm_positions` for the pretrainer, as the original TF-Hub `mlm` signature) -> the model's named
  outputs (original-release §9.2 names). SQuAD v2 derives `p_mask` from `input_mask` and `segment_ids`.
* `serve_examples`: a `[batch]` string tensor `examples` of serialized `tf.Example`s with the original TFRecord
  feature names and lengths (int64 `[max_seq_length]`), as the original `run_classifier.py --export_dir`.
* `serve_text`: raw UTF-8 strings (`text_a`, `text_b`; SQuAD `question`, `context`; RACE `article`,
  `question`, `options [batch, 4]`) normalised, SentencePiece-tokenised (tensorflow-text ops, through
  `albert_tf.text_ops`), truncated and packed in the graph exactly like the Python pipeline (§6, §8.1, §8.3,
  §8.6). It needs the tensorflow-text ops in the process that loads the model (`import tensorflow_text`).

plus `tokenization_info` (no inputs: the path of the SentencePiece asset and `do_lower_case`, as the TF-Hub
module). The SentencePiece model and `albert_config.json` are saved as assets.

Why `tf.Module` + `tf.saved_model.save` rather than `keras.export.ExportArchive`: the export needs string-input
signatures backed by a tensorflow-text resource, named assets, and a `tokenization_info` function; a plain
`tf.Module` holds all of these as attributes with no special casing, and `tf.saved_model.save` is what TF
Serving reads. The model's variables are tracked the way `ExportArchive` does it (the list of the Keras
model's variables on the module), because a Keras 3 model kept as an attribute of a `tf.Module` leaves the
variables of nested layer lists untracked. Every signature is a `tf.function` with an explicit
`input_signature`, so int32 inputs stay int32 and a wrong dtype or rank is rejected by the signature.
"""

import inspect
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import text_ops
from albert_tf.checkpoints import load_pretrained, resolve_source
from albert_tf.layers import activations
from albert_tf.models.albert_model import AlbertModel, as_config
from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.race import AlbertRace
from albert_tf.models.squad import AlbertSquadV1, AlbertSquadV2

SERVING_DEFAULT = "serving_default"
SERVE_EXAMPLES = "serve_examples"
SERVE_TEXT = "serve_text"
TOKENIZATION_INFO = "tokenization_info"

RACE_NUM_CHOICES = 4
# Checked in this order by `model_kind`; the task models are not subclasses of one another or of AlbertModel.
MODEL_CLASSES = {
    "encoder": AlbertModel,
    "pretrainer": AlbertPretrainer,
    "classifier": AlbertClassifier,
    "squad_v1": AlbertSquadV1,
    "squad_v2": AlbertSquadV2,
    "race": AlbertRace,
}
MODEL_KINDS = tuple(MODEL_CLASSES)
_TOKEN_INPUTS = ("input_ids", "input_mask", "segment_ids")


def _model_class(kind):
    if kind not in MODEL_CLASSES:
        raise ValueError(f"`model` must be one of {', '.join(MODEL_KINDS)}. Received: `model={kind!r}`.")
    return MODEL_CLASSES[kind]


def model_kind(model):
    """The export kind of `model` (one of `MODEL_KINDS`), from its class."""
    for kind, model_cls in MODEL_CLASSES.items():
        if isinstance(model, model_cls):
            return kind
    raise TypeError("`model` must be an AlbertModel, AlbertPretrainer, AlbertClassifier, AlbertSquadV1, "
                    f"AlbertSquadV2 or AlbertRace. Received: {type(model).__name__}.")


# --- Model calls: named features in, named serving outputs out -------------------------------------------


def _token_specs(kind):
    """`{name: TensorSpec}` of the `serving_default` inputs of a model kind."""
    shape = [None, RACE_NUM_CHOICES, None] if kind == "race" else [None, None]
    specs = {name: tf.TensorSpec(shape, tf.int32, name=name) for name in _TOKEN_INPUTS}
    if kind == "pretrainer":
        specs["mlm_positions"] = tf.TensorSpec([None, None], tf.int32, name="mlm_positions")
    return specs


def _check_features(features, max_position_embeddings, vocab_size):
    """Graph-side checks the signature's dtype/rank check cannot do: equal shapes, length limit, id range."""
    ids = features["input_ids"]
    checks = [tf.debugging.assert_non_negative(ids, message="`input_ids` must be non-negative"),
              tf.debugging.assert_less(ids, vocab_size, message=f"`input_ids` must be < vocab_size={vocab_size}")]
    for name in ("input_mask", "segment_ids", "p_mask"):
        if name in features:
            checks.append(tf.debugging.assert_equal(
                tf.shape(features[name]), tf.shape(ids),
                message=f"`{name}` must have the shape of `input_ids`"))
    checks.append(tf.debugging.assert_less_equal(
        tf.shape(ids)[-1], max_position_embeddings,
        message=f"The sequence length must be at most max_position_embeddings={max_position_embeddings}"))
    if "mlm_positions" in features:
        checks.append(tf.debugging.assert_equal(
            tf.shape(features["mlm_positions"])[0], tf.shape(ids)[0],
            message="`mlm_positions` must have the batch size of `input_ids`"))
    with tf.control_dependencies(checks):
        return {name: tf.identity(t) for name, t in features.items()}


def _run_model(model, kind, features, threshold=None):
    """Calls `model` (inference mode) on int32 serving features and returns the named serving outputs."""
    inputs = {name: features[name] for name in _TOKEN_INPUTS}
    if kind == "pretrainer":
        inputs["masked_lm_positions"] = features["mlm_positions"]
    if kind == "squad_v2" and "p_mask" in features:
        inputs["p_mask"] = features["p_mask"]  # Else the model derives it from `input_mask`, `segment_ids`.
    out = model(inputs, training=False)
    if kind == "encoder":
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}
    if kind == "pretrainer":
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"],
                "mlm_logits": out["mlm_logits"],                                         # [batch, P, V]
                "sop_log_probs": tf.nn.log_softmax(tf.cast(out["sop_logits"], tf.float32), axis=-1)}
    if kind == "classifier":
        outputs = {"probabilities": out["probabilities"], "predictions": out["predictions"]}
        if threshold is not None:
            # A constant shipped with the model (e.g. a tuned decision threshold), one value per example so
            # that TF Serving's row format can split it like the other outputs.
            outputs["threshold"] = tf.fill(tf.shape(out["predictions"])[:1], tf.constant(threshold, tf.float32))
        return outputs
    if kind == "squad_v1":
        return {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}
    if kind == "squad_v2":
        return {name: out[name] for name in ("start_top_log_probs", "start_top_index", "end_top_log_probs",
                                             "end_top_index", "cls_logits")}
    if kind == "race":
        return {"logits": out["logits"], "probabilities": out["probabilities"],
                "predictions": out["predictions"]}
    raise ValueError(f"Unknown model kind `{kind}`.")


# --- serve_examples: the original TFRecord features ------------------------------------------------------


def example_feature_spec(kind, max_seq_length, max_predictions_per_seq=20):
    """`{name: FixedLenFeature}` parsed by `serve_examples` (original-release §5.4, §8.1, §8.3, §8.6)."""
    length = max_seq_length * RACE_NUM_CHOICES if kind == "race" else max_seq_length
    spec = {name: tf.io.FixedLenFeature([length], tf.int64) for name in _TOKEN_INPUTS}
    if kind == "pretrainer":
        spec["masked_lm_positions"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    if kind in ("squad_v1", "squad_v2"):
        # Passed through so that a client can match the outputs with its features, as the original predict.
        spec["unique_ids"] = tf.io.FixedLenFeature([], tf.int64, default_value=0)
    if kind == "squad_v2":
        spec["p_mask"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    return spec


def _features_from_examples(kind, examples, max_seq_length, max_predictions_per_seq):
    parsed = tf.io.parse_example(examples, example_feature_spec(kind, max_seq_length, max_predictions_per_seq))
    features = {}
    for name in _TOKEN_INPUTS:
        ids = tf.cast(parsed[name], tf.int32)
        if kind == "race":
            ids = tf.reshape(ids, [-1, RACE_NUM_CHOICES, max_seq_length])               # [batch, 4, seq]
        features[name] = ids
    if kind == "pretrainer":
        features["mlm_positions"] = tf.cast(parsed["masked_lm_positions"], tf.int32)
    if kind == "squad_v2":
        features["p_mask"] = tf.cast(parsed["p_mask"], tf.int32)
    passthrough = {"unique_ids": parsed["unique_ids"]} if "unique_ids" in parsed else {}
    return features, passthrough


# --- serve_text: in-graph tokenization and packing --------------------------------------------------------


def _row_limits(rt, limits):
    """Keeps the first `limits[i]` items of row i of a ragged `[batch, (n)]` tensor."""
    keep = tf.ragged.range(rt.row_lengths()) < tf.expand_dims(tf.cast(limits, rt.row_splits.dtype), 1)
    return tf.ragged.boolean_mask(rt, keep)


def _keep_last(rt, n):
    """Keeps the last `n` items of every row (Python `tokens[-n:]`)."""
    lengths = rt.row_lengths()
    keep = tf.ragged.range(lengths) >= tf.expand_dims(lengths - tf.cast(n, lengths.dtype), 1)
    return tf.ragged.boolean_mask(rt, keep)


def _fill_rows(lengths, value):
    """A ragged `[batch, (lengths[i])]` int32 tensor filled with `value`."""
    lengths = tf.cast(lengths, tf.int64)
    return tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(lengths)], tf.constant(value, tf.int32)), lengths)


def pack_segments(first, second, max_seq_length, cls_id, sep_id, second_optional=True):
    """`[CLS] first [SEP] (second [SEP])` + zero padding, as the original feature converters.

    Args:
        first: ragged int32 `[batch, (n)]`, already truncated.
        second: ragged int32 `[batch, (m)]`, already truncated.
        max_seq_length: int, padded length L.
        cls_id: int, id of `[CLS]`.
        sep_id: int, id of `[SEP]`.
        second_optional: bool; when True a row whose `second` is empty gets no second `[SEP]` (the
            original's `if tokens_b:`), else the second `[SEP]` is always written (SQuAD, RACE).

    Returns:
        dict of int32 `[batch, L]`: `input_ids`, `input_mask`, `segment_ids`, and `p_mask` (1 on `[SEP]`s,
        `first` and padding; 0 on `[CLS]` and `second`: the SQuAD layout with `first` = question).
    """
    batch = first.nrows()
    ones = tf.ones([batch], tf.int64)
    has_second = second.row_lengths() > 0 if second_optional else tf.ones([batch], tf.bool)
    last_sep = tf.cast(has_second, tf.int64)
    pieces = [  # (ids, segment, p_mask) per piece
        (_fill_rows(ones, cls_id), 0, 0),
        (first, 0, 1),
        (_fill_rows(ones, sep_id), 0, 1),
        (second, 1, 0),
        (_fill_rows(last_sep, sep_id), 1, 1),
    ]
    ids = tf.concat([p[0] for p in pieces], axis=1)
    segments = tf.concat([tf.ones_like(p[0]) * p[1] for p in pieces], axis=1)
    p_mask = tf.concat([tf.ones_like(p[0]) * p[2] for p in pieces], axis=1)
    shape = [None, max_seq_length]
    return {
        "input_ids": ids.to_tensor(default_value=0, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(default_value=0, shape=shape),
        "segment_ids": segments.to_tensor(default_value=0, shape=shape),
        "p_mask": p_mask.to_tensor(default_value=1, shape=shape),
    }


class _TextPipeline(tf.Module):
    """Tokenization (normalisation + SentencePiece) and the per-task packing, as TF ops.

    Args:
        spm_model_proto: bytes of the SentencePiece model.
        do_lower_case: bool, lower-case in the normalisation (the original `preprocess_text(lower=...)`).
        kind: str, the model kind (selects the packing).
        max_seq_length: int, L.
        vocab_size: int, the model's vocabulary size (checked against the SentencePiece model).
        max_query_length: int, SQuAD question length limit (keep the first tokens).
        max_qa_length: int, RACE question+option length limit (keep the last tokens).
    """

    def __init__(self, spm_model_proto, do_lower_case, kind, max_seq_length, vocab_size, max_query_length=64,
                 max_qa_length=128):
        super().__init__(name="text_pipeline")
        self.tokenizer = text_ops.AlbertTextTokenizer(spm_model_proto, do_lower_case=do_lower_case)
        self.kind = kind
        self.max_seq_length = int(max_seq_length)
        self.max_query_length = int(max_query_length)
        self.max_qa_length = int(max_qa_length)
        ids = _special_ids(spm_model_proto)
        if self.tokenizer.vocab_size > vocab_size:
            raise ValueError(f"The SentencePiece model has {self.tokenizer.vocab_size} pieces but the model's "
                             f"`vocab_size` is {vocab_size}: they must come from the same release.")
        self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]

    def tokenize(self, strings):
        return tf.cast(self.tokenizer.tokenize(strings), tf.int32)                       # [batch, (n)]

    def tokenize_with_masks(self, strings):
        """Like `tokenize`, but each literal `[MASK]` (any case) becomes the `[MASK]` id (fill-mask serving).

        The text between masks is tokenized piece by piece, as the Python path
        `[encode_ids(preprocess_text(chunk)) for chunk in text.split("[MASK]")]` joined by the mask id.
        """
        chunks = tf.strings.split(tf.strings.regex_replace(strings, r"(?i)\[mask\]", "[MASK]"), "[MASK]")
        chunk_ids = self.tokenize(chunks.flat_values)                                      # [chunks, (n)]
        # Every chunk but the last of its row is followed by one [MASK].
        is_last = tf.ragged.range(chunks.row_lengths()) == tf.expand_dims(chunks.row_lengths() - 1, 1)
        mask_tail = _fill_rows(1 - tf.cast(is_last.flat_values, tf.int64), self.mask_id)
        per_chunk = tf.concat([chunk_ids, mask_tail], axis=1)                              # [chunks, (n+1)]
        return tf.RaggedTensor.from_row_lengths(per_chunk, chunks.row_lengths()).merge_dims(1, 2)

    def pack_pair(self, ids_a, ids_b):
        """GLUE `convert_single_example`: single `a[:L-2]`, pair `_truncate_seq_pair(a, b, L-3)`.

        Decided per row, as the original's `if tokens_b:`: a row whose `b` has no tokens (`text_b` empty) is
        a single segment, so one batch can mix both (`text_ops.pack_inputs` decides for the whole batch).
        """
        len_a, len_b = ids_a.row_lengths(), ids_b.row_lengths()
        single = tf.equal(len_b, 0)
        pair_a, pair_b = text_ops.truncate_pair_lengths(len_a, len_b, self.max_seq_length - 3)
        new_a = tf.where(single, tf.minimum(len_a, self.max_seq_length - 2), pair_a)
        new_b = tf.where(single, tf.zeros_like(len_b), pair_b)
        packed = pack_segments(_row_limits(ids_a, new_a), _row_limits(ids_b, new_b), self.max_seq_length,
                               self.cls_id, self.sep_id, second_optional=True)
        packed.pop("p_mask")
        return packed

    def pack_squad(self, question, context):
        """SQuAD `convert_examples_to_features`, first document span only: `[CLS] q [SEP] doc [SEP]`."""
        query = _row_limits(question, tf.fill([question.nrows()], tf.cast(self.max_query_length, tf.int64)))
        max_tokens_for_doc = tf.maximum(self.max_seq_length - 3 - query.row_lengths(), 0)
        doc = _row_limits(context, max_tokens_for_doc)
        return pack_segments(query, doc, self.max_seq_length, self.cls_id, self.sep_id, second_optional=False)

    def pack_race(self, context, endings):
        """RACE `convert_single_example` per choice: ending keeps its last `max_qa_length` tokens, then the
        article is cut to `L - 3 - len(ending)`."""
        ending = _keep_last(endings, self.max_qa_length)
        max_context = tf.maximum(self.max_seq_length - 3 - ending.row_lengths(), 0)
        context = _row_limits(context, max_context)
        packed = pack_segments(context, ending, self.max_seq_length, self.cls_id, self.sep_id,
                               second_optional=False)
        packed.pop("p_mask")
        return packed


def _special_ids(spm_model_proto):
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(spm_model_proto)
    ids = {}
    for piece in ("[CLS]", "[SEP]", "[MASK]"):
        piece_id = sp.PieceToId(piece)
        if piece_id == sp.unk_id():
            raise ValueError(f"The SentencePiece model has no `{piece}` piece; ALBERT models are trained with "
                             "`--control_symbols=[CLS],[SEP],[MASK]` (original-release §6).")
        ids[piece] = piece_id
    return ids


def _race_endings(pipeline, question, options):
    """`question.replace("_", option)` if the question has a blank, else `question + " " + option`, on
    normalised text (as `race_utils`: both are `process_text`-ed, the result is not), then tokenized:
    ragged `[batch * 4, (n)]`."""
    normalize = pipeline.tokenizer.normalize
    question = normalize(question)                                                        # [batch]
    options = normalize(tf.reshape(options, [-1]))                                        # [batch * 4]
    question = tf.repeat(question, RACE_NUM_CHOICES)                                      # [batch * 4]
    parts = tf.strings.split(question, "_")                                               # [batch*4, (k)]
    is_last = tf.ragged.range(parts.row_lengths()) == tf.expand_dims(parts.row_lengths() - 1, 1)
    fill = tf.where(is_last.flat_values, "", tf.gather(options, parts.value_rowids()))
    cloze = tf.strings.reduce_join(parts.with_flat_values(tf.strings.join([parts.flat_values, fill])), axis=1)
    appended = tf.strings.join([question, options], separator=" ")
    endings = tf.where(tf.strings.regex_full_match(question, r"(?s).*_.*"), cloze, appended)
    return tf.cast(pipeline.tokenizer.tokenize_normalized(endings), tf.int32)


def _text_features(pipeline, kind, texts):
    """Packed int32 features (and the extra outputs) from the `serve_text` inputs of a model kind."""
    if kind in ("encoder", "classifier"):
        return pipeline.pack_pair(pipeline.tokenize(texts["text_a"]), pipeline.tokenize(texts["text_b"]))
    if kind == "pretrainer":
        features = pipeline.pack_pair(pipeline.tokenize_with_masks(texts["text_a"]),
                                      pipeline.tokenize_with_masks(texts["text_b"]))
        is_mask = tf.equal(features["input_ids"], pipeline.mask_id)
        positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(pipeline.max_seq_length, dtype=tf.int32),
                                                           tf.shape(is_mask)), is_mask)
        features["mlm_positions"] = positions.to_tensor(default_value=0)                  # [batch, P]
        features["mlm_weights"] = tf.ones_like(positions).to_tensor(default_value=0)
        return features
    if kind in ("squad_v1", "squad_v2"):
        features = pipeline.pack_squad(pipeline.tokenize(texts["question"]), pipeline.tokenize(texts["context"]))
        if kind == "squad_v1":
            features.pop("p_mask")
        return features
    if kind == "race":
        batch = tf.shape(texts["article"])[0]
        article = pipeline.tokenize(texts["article"])
        context = tf.gather(article, tf.repeat(tf.range(batch), RACE_NUM_CHOICES))       # [batch*4, (n)]
        packed = pipeline.pack_race(context, _race_endings(pipeline, texts["question"], texts["options"]))
        return {name: tf.reshape(t, [-1, RACE_NUM_CHOICES, pipeline.max_seq_length])     # [batch, 4, L]
                for name, t in packed.items()}
    raise ValueError(f"Unknown model kind `{kind}`.")


def _text_specs(kind):
    if kind in ("encoder", "classifier", "pretrainer"):
        names = ("text_a", "text_b")
    elif kind in ("squad_v1", "squad_v2"):
        names = ("question", "context")
    else:
        specs = {name: tf.TensorSpec([None], tf.string, name=name) for name in ("article", "question")}
        specs["options"] = tf.TensorSpec([None, RACE_NUM_CHOICES], tf.string, name="options")
        return specs
    return {name: tf.TensorSpec([None], tf.string, name=name) for name in names}


# --- The exported module ----------------------------------------------------------------------------------


class _ServingModule(tf.Module):
    """What is saved: the model's variables, the assets, the text pipeline and the signature functions."""

    def __init__(self, model, kind, config_asset, spm_asset, text_pipeline, do_lower_case, max_seq_length,
                 max_predictions_per_seq, threshold):
        super().__init__(name="albert_serving")
        # Tracked like keras.export.ExportArchive does: the variable list, not the Keras model object.
        self.model_variables = list(model.variables)
        self.config_file = config_asset
        self.vocab_file = spm_asset
        self.text_pipeline = text_pipeline
        max_positions = int(model.config.max_position_embeddings)
        vocab_size = int(model.config.vocab_size)

        token_specs = _token_specs(kind)

        def serve_tokens(**features):
            return _run_model(model, kind, _check_features(features, max_positions, vocab_size), threshold)

        self.serve_tokens = _signature_fn(serve_tokens, token_specs)

        def serve_examples(examples):
            features, passthrough = _features_from_examples(kind, examples, max_seq_length,
                                                            max_predictions_per_seq)
            outputs = _run_model(model, kind, features, threshold)
            outputs.update(passthrough)
            return outputs

        self.serve_examples = _signature_fn(serve_examples,
                                            {"examples": tf.TensorSpec([None], tf.string, name="examples")})

        if text_pipeline is not None:
            text_specs = _text_specs(kind)

            def serve_text(**texts):
                features = _text_features(self.text_pipeline, kind, texts)
                outputs = _run_model(model, kind, features, threshold)
                outputs["input_ids"] = features["input_ids"]
                for name in ("mlm_positions", "mlm_weights"):
                    if name in features:
                        outputs[name] = features[name]
                if kind == "pretrainer":
                    outputs["mlm_predictions"] = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
                return outputs

            self.serve_text = _signature_fn(serve_text, text_specs)

        lower = tf.constant(bool(do_lower_case))

        def tokenization_info():
            vocab = self.vocab_file.asset_path if self.vocab_file is not None else tf.constant("")
            return {"vocab_file": vocab, "do_lower_case": lower}

        self.tokenization_info = tf.function(tokenization_info, input_signature=[])

    def signatures(self):
        signatures = {SERVING_DEFAULT: self.serve_tokens, SERVE_EXAMPLES: self.serve_examples,
                      TOKENIZATION_INFO: self.tokenization_info}
        if self.text_pipeline is not None:
            signatures[SERVE_TEXT] = self.serve_text
        return signatures


def _signature_fn(fn, specs):
    """A `tf.function` with `input_signature=specs.values()` calling `fn(**{name: tensor})`.

    A loaded signature checks the dtype of its inputs but not their shape, so each input first goes through
    `tf.ensure_shape`: a tensor of the wrong rank fails right there with "Shape of tensor input_ids [3] is not
    compatible with expected shape [?,?]", not deep in the graph.
    """
    names = list(specs)

    def wrapper(*args):
        return fn(**{name: tf.ensure_shape(arg, specs[name].shape, name=f"check_{name}")
                     for name, arg in zip(names, args)})

    # Keyword names of the signature (TF Serving's input keys) are these parameter names.
    wrapper.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    wrapper.__name__ = fn.__name__
    return tf.function(wrapper, input_signature=list(specs.values()))


# --- Public API -------------------------------------------------------------------------------------------


def next_version(export_dir):
    """1 + the largest integer-named subdirectory of `export_dir` (1 when there is none)."""
    if not tf.io.gfile.isdir(export_dir):
        return 1
    versions = [int(name.rstrip("/")) for name in tf.io.gfile.listdir(export_dir)
                if re.fullmatch(r"\d+/?", name)]
    return max(versions, default=0) + 1


def export_saved_model(model, export_dir, spm_model_file=None, do_lower_case=True, max_seq_length=512,
                       version=None, config=None, threshold=None, max_predictions_per_seq=20,
                       max_query_length=64, max_qa_length=128, text_signature=True):
    """Exports `model` as a TF Serving SavedModel in `<export_dir>/<version>/`.

    Args:
        model: a built `AlbertModel`, `AlbertPretrainer`, `AlbertClassifier`, `AlbertSquadV1`,
            `AlbertSquadV2` or `AlbertRace` (the kind is read from the class).
        export_dir: str, the model base directory TF Serving watches.
        spm_model_file: optional str, the SentencePiece `.model`; saved as an asset and needed for
            `serve_text` (without it, only the token-id and `tf.Example` signatures are exported).
        do_lower_case: bool, lower-case raw text (True for all English releases).
        max_seq_length: int, L: the length of the `tf.Example` features and of the packed raw text.
        version: optional int, the version subdirectory; default: one more than the largest existing.
        config: optional `AlbertConfig`/dict/JSON path saved as the `albert_config.json` asset; default: the
            model's config.
        threshold: optional float, a constant output `threshold` of the classifier signatures.
        max_predictions_per_seq: int, length of `masked_lm_positions` in pretraining `tf.Example`s.
        max_query_length: int, SQuAD `serve_text`: questions keep their first tokens.
        max_qa_length: int, RACE `serve_text`: question+option keep their last tokens.
        text_signature: bool; False leaves out `serve_text` (the SentencePiece model is still an asset), so the
            export uses core TensorFlow ops only and loads in servers without the tensorflow-text ops.

    Returns:
        str, the path of the written version directory.
    """
    kind = model_kind(model)
    if not isinstance(max_seq_length, (int, np.integer)) or max_seq_length < 3:
        raise ValueError(f"`max_seq_length` must be an int >= 3. Received: `max_seq_length={max_seq_length!r}`.")
    max_positions = model.config.max_position_embeddings
    if max_seq_length > max_positions:
        raise ValueError(f"`max_seq_length={max_seq_length}` exceeds the model's "
                         f"`max_position_embeddings={max_positions}`.")
    if kind in ("squad_v1", "squad_v2") and max_seq_length <= max_query_length + 3:
        # The original's `validate_flags_or_throw` rule: the document needs room after the question.
        raise ValueError(f"`max_seq_length={max_seq_length}` must be greater than `max_query_length="
                         f"{max_query_length}` + 3.")
    if kind == "race" and max_qa_length > max_seq_length - 3:
        raise ValueError(f"`max_qa_length={max_qa_length}` leaves no room in `max_seq_length={max_seq_length}`: "
                         "need max_qa_length <= max_seq_length - 3.")
    if threshold is not None and kind != "classifier":
        raise ValueError(f"`threshold` applies to classifiers only. Received `threshold={threshold}` for a "
                         f"{type(model).__name__}.")
    if spm_model_file is not None and not tf.io.gfile.exists(spm_model_file):
        raise FileNotFoundError(f"`spm_model_file` not found: `{spm_model_file}`.")
    if version is None:
        version = next_version(export_dir)
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 0:
        raise ValueError(f"`version` must be a non-negative int. Received: `version={version!r}`.")
    final_dir = os.path.join(export_dir, str(int(version)))
    if tf.io.gfile.exists(final_dir):
        raise ValueError(f"`{final_dir}` already exists; pass another `version` or none for the next one.")

    config = as_config(config) if config is not None else model.config
    proto = None
    if spm_model_file is not None:
        with tf.io.gfile.GFile(spm_model_file, "rb") as f:
            proto = f.read()
    # Everything that can reject the arguments runs before anything is written.
    pipeline = None
    if proto is not None and text_signature:
        pipeline = _TextPipeline(proto, do_lower_case, kind, max_seq_length, model.config.vocab_size,
                                 max_query_length, max_qa_length)

    tf.io.gfile.makedirs(export_dir)
    staging = tempfile.mkdtemp(prefix="albert_export_")  # The asset files, copied into the export by save().
    tmp_dir = os.path.join(export_dir, f".tmp-{int(version)}-{os.getpid()}")
    try:
        config_path = os.path.join(staging, "albert_config.json")
        config.to_json_file(config_path)
        spm_asset = None
        if proto is not None:
            spm_copy = os.path.join(staging, os.path.basename(spm_model_file))
            with open(spm_copy, "wb") as f:
                f.write(proto)
            spm_asset = tf.saved_model.Asset(spm_copy)
        module = _ServingModule(model, kind, tf.saved_model.Asset(config_path), spm_asset, pipeline,
                                do_lower_case, int(max_seq_length), int(max_predictions_per_seq), threshold)
        logging.info("Exporting %s (%s) to %s", type(model).__name__, kind, final_dir)
        if tf.io.gfile.exists(tmp_dir):
            tf.io.gfile.rmtree(tmp_dir)
        # Signatures are traced here, with plain ops only: TF Serving runs no XLA clusters by default.
        with activations.plain_inference_ops():
            tf.saved_model.save(module, tmp_dir, signatures=module.signatures())
        tf.io.gfile.rename(tmp_dir, final_dir)
    except BaseException:
        if tf.io.gfile.exists(tmp_dir):
            tf.io.gfile.rmtree(tmp_dir)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logging.info("Exported signatures %s to %s", sorted(module.signatures()), final_dir)
    return final_dir


def export_from_checkpoint(input_path, export_dir, model="encoder", num_labels=2, albert_config_file=None,
                           spm_model_file=None, **export_kwargs):
    """Loads a model from any checkpoint source and exports it (the library side of `albert-export`).

    Args:
        input_path: str, anything `albert_tf.checkpoints.resolve_source` reads: a Google TF1 checkpoint
            prefix, release directory or `.tar.gz`, a TF-Hub TF1 module directory, or one of our checkpoints.
        export_dir: str, base directory; the export goes to `<export_dir>/<version>/`.
        model: str, one of `MODEL_KINDS`.
        num_labels: int, classifier labels (1 = regression); ignored by the other kinds.
        albert_config_file: optional str, the config when the source has none (our TF2 checkpoints).
        spm_model_file: optional str; default: the SentencePiece model found with the source (without one,
            `serve_text` is not exported).
        **export_kwargs: more `export_saved_model` arguments (`max_seq_length`, `do_lower_case`, ...).

    Returns:
        str, the version directory written.
    """
    model_cls = _model_class(model)
    model_kwargs = {"num_labels": int(num_labels)} if model == "classifier" else {}
    with resolve_source(input_path) as source:
        config = albert_config_file or source.config_file
        if config is None:
            raise ValueError(f"No `albert_config.json` found with `{input_path}`; pass `albert_config_file`.")
        # Heads must come from the checkpoint: an export with a freshly initialised head would serve noise.
        net = load_pretrained(model_cls, source.checkpoint_prefix, config=config, allow_missing_heads=False,
                              **model_kwargs)
        spm_model_file = spm_model_file or source.spm_model_file
        if spm_model_file is None:
            logging.warning("No SentencePiece model given or found with `%s`: exporting without `serve_text`.",
                            input_path)
        return export_saved_model(net, export_dir, spm_model_file=spm_model_file, config=config,
                                  **export_kwargs)


def _define_flags():
    flags.DEFINE_string("input", None, "Checkpoint source: Google TF1 checkpoint prefix, release directory or "
                        ".tar.gz, TF-Hub TF1 module directory, or an albert_tf checkpoint prefix.")
    flags.DEFINE_enum("model", "encoder", list(MODEL_KINDS), "Which model the checkpoint holds.")
    flags.DEFINE_integer("num_labels", 2, "Classifier labels (1 = STS-B style regression).")
    flags.DEFINE_string("albert_config_file", None, "albert_config.json, when the source has none.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model for serve_text (default: the source's).")
    flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<version>/.")
    flags.DEFINE_integer("max_seq_length", 512, "Length of the tf.Example features and of packed raw text.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case raw text (True for the English releases).")
    flags.DEFINE_integer("version", None, "Version subdirectory (default: the next integer).")
    flags.DEFINE_float("threshold", None, "Classifier only: a constant `threshold` output.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Pretrainer tf.Example `masked_lm_positions` length.")
    flags.DEFINE_integer("max_query_length", 64, "SQuAD serve_text: question tokens kept.")
    flags.DEFINE_integer("max_qa_length", 128, "RACE serve_text: question+option tokens kept (the last).")
    flags.DEFINE_bool("serve_text", True, "Export the raw-text signature (needs the tensorflow-text ops in the "
                      "server); --noserve_text exports core ops only.")
    flags.mark_flags_as_required(["input", "export_dir"])


def _run(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    f = flags.FLAGS
    try:
        path = export_from_checkpoint(
            f.input, f.export_dir, model=f.model, num_labels=f.num_labels, albert_config_file=f.albert_config_file,
            spm_model_file=f.spm_model_file, max_seq_length=f.max_seq_length, do_lower_case=f.do_lower_case,
            version=f.version, threshold=f.threshold, max_predictions_per_seq=f.max_predictions_per_seq,
            max_query_length=f.max_query_length, max_qa_length=f.max_qa_length, text_signature=f.serve_text)
    except (ValueError, TypeError, FileNotFoundError) as e:  # Bad input: a message, not a traceback.
        sys.stderr.write(f"albert-export: error: {e}\n")
        sys.exit(2)
    print(path)


def main():
    """`albert-export`: a checkpoint -> a TF Serving SavedModel (see `export_from_checkpoint`)."""
    _define_flags()
    app.run(_run)


if __name__ == "__main__":
    main()
