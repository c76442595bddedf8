"""The `squad_v1` and `squad_v2` model kinds: the `squad` text mode of `albert_tf.AlbertPreprocessor` and the
`serve_text` packing of the SQuAD models (a dict `question`, `context` -> `[CLS] question [SEP] context [SEP]` of the
first document span, SQuAD `convert_examples_to_features`; the question keeps its first `max_query_length` tokens,
with `p_mask`), how they are served, their checkpoint names and their registration."""

import numpy as np
import tensorflow as tf

from albert_tf import registry
from albert_tf.checkpoints import table
from albert_tf.data import features
from albert_tf.errors import InputError
from albert_tf.config import TOKEN_INPUTS
from albert_tf.serving_spec import ServingSpec, string_specs
from albert_tf.tasks.squad.data import SQUAD
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.text import modes
from albert_tf.text.ops import keep_first, pack_segments


def pack_squad(question, context, max_seq_length, max_query_length, cls_id, sep_id):
    """SQuAD `convert_examples_to_features`, first document span only: `[CLS] q [SEP] doc [SEP]`.

    Args:
        question, context: ragged int32 `[batch, (n)]`, `[batch, (m)]`.
        max_seq_length: int, L.
        max_query_length: int, the question keeps its first tokens.
        cls_id, sep_id: int.

    Returns:
        dict of int32 `[batch, L]`: `input_ids`, `input_mask`, `segment_ids`, `p_mask`.
    """
    query = keep_first(question, tf.fill([question.nrows()], tf.cast(max_query_length, tf.int64)))
    max_tokens_for_doc = tf.maximum(max_seq_length - 3 - query.row_lengths(), 0)
    doc = keep_first(context, max_tokens_for_doc)
    return pack_segments(query, doc, max_seq_length, cls_id, sep_id, second_optional=False)


def pack_squad_texts(pipeline, question, context):
    """`[CLS] question [SEP] context [SEP]` of tf.string `[batch]` tensors by `pipeline` (an
    `albert_tf.text.ops.TextPipeline`), the first document span (`pack_squad`), with `p_mask`."""
    return pack_squad(pipeline.tokenize(question), pipeline.tokenize(context), pipeline.max_seq_length,
                      pipeline.max_query_length, pipeline.cls_id, pipeline.sep_id)


def _validate(preprocessor, inputs):
    del preprocessor
    modes.check_keys_same_batch(inputs, ("question", "context"))


def _pack(preprocessor, inputs):
    return pack_squad_texts(preprocessor.pipeline, tf.reshape(inputs["question"], [-1]),
                            tf.reshape(inputs["context"], [-1]))


def _check(preprocessor):
    if preprocessor.max_seq_length <= preprocessor.max_query_length + 3:
        raise InputError(f"`max_seq_length={preprocessor.max_seq_length}` must be greater than `max_query_length="
                         f"{preprocessor.max_query_length}` + 3.")


# The original's `--max_query_length`; `max_seq_length > max_query_length + 3` (`validate_flags_or_throw`).
MAX_QUERY_LENGTH = modes.Length("max_query_length", 64, "The maximum number of tokens for the question. Questions "
                                "longer than this will be truncated to this length.", room=4)
SQUAD_TEXT = modes.TextMode(name="squad", keys=("question", "context"),
                            layout="`question` and `context` (SQuAD)", validate=_validate, pack=_pack, check=_check, lengths=(MAX_QUERY_LENGTH,))


class SquadV1Spec(ServingSpec):
    """`AlbertSquadV1`: start/end logits; `serve_text` packs the first document span of (question, context)."""

    pipeline_tasks = ("question-answering",)

    def outputs(self, out, threshold):
        return {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}

    # `unique_ids` is passed through so that a client can match the outputs with its features, as the original
    # predict; a client may leave it out.
    example_names = TOKEN_INPUTS + ("unique_ids",)

    def example_spec(self, max_seq_length, lengths):
        return features.parse_spec(features.select(SQUAD, self.example_names), defaults={"unique_ids": 0},
                                   seq=max_seq_length)

    def example_features(self, parsed, max_seq_length):
        features, _ = super().example_features(parsed, max_seq_length)
        return features, {"unique_ids": parsed["unique_ids"]}

    def text_specs(self):
        return string_specs(("question", "context"))

    def text_features(self, pipeline, texts):
        features = pack_squad_texts(pipeline, texts["question"], texts["context"])
        features.pop("p_mask")
        return features

    def calibration_rows(self, fields, path, number, tokenizer, do_lower_case, shapes):
        """`question<TAB>context`, in `run_squad.py`'s doc-stride windows (stride 128, questions of 64 pieces)."""
        from albert_tf.tasks.squad import data as squad  # Only for text calibration.

        if len(fields) != 2:
            raise InputError(f"`{path}` line {number}: expected `question<TAB>context` for {self.kind} calibration.")
        features = []
        squad.convert_examples_to_features(
            [squad.SquadExample(qas_id=str(number), question_text=fields[0], paragraph_text=fields[1])],
            tokenizer, shapes["input_ids"][-1], 128, 64, False, features.append, do_lower_case)
        return [{name: np.asarray(getattr(feature, name), np.int32) for name in shapes} for feature in features]


class SquadV2Spec(SquadV1Spec):
    """`AlbertSquadV2` (XLNet-style head): top-k start/end log-probs and indices and the answerability logit.

    `p_mask` comes with `tf.Example`s and `serve_text`; `serving_default` lets the model derive it from
    `input_mask` and `segment_ids`.
    """

    def model_inputs(self, features):
        inputs = super().model_inputs(features)
        if "p_mask" in features:
            inputs["p_mask"] = features["p_mask"]
        return inputs

    def outputs(self, out, threshold):
        return {name: out[name] for name in ("start_top_log_probs", "start_top_index", "end_top_log_probs",
                                             "end_top_index", "cls_logits")}

    example_names = SquadV1Spec.example_names + ("p_mask",)

    def example_features(self, parsed, max_seq_length):
        features, passthrough = super().example_features(parsed, max_seq_length)
        features["p_mask"] = tf.cast(parsed["p_mask"], tf.int32)
        return features, passthrough

    def text_features(self, pipeline, texts):
        return pack_squad_texts(pipeline, texts["question"], texts["context"])

    def export_facts(self, model):
        facts = super().export_facts(model)
        facts.update(start_n_top=int(model.start_n_top), end_n_top=int(model.end_n_top))
        return facts


# `squad_utils.create_v1_model`: `cls/squad/output_weights [2, H]`; transformers' `AlbertForQuestionAnswering`.
V1_HEAD = table.output_projection_head("squad_v1", "cls/squad", "squad_head", hf_module="qa_outputs")
V1_KIND = registry.register(registry.ModelKind(
    name="squad_v1", model_class=AlbertSquadV1, heads=(V1_HEAD,), serving_spec=SquadV1Spec(),
    hf_architecture="AlbertForQuestionAnswering", order=3, text_mode=SQUAD_TEXT))
# `squad_utils.create_v2_model` (XLNet-style); transformers has no such head.
V2_HEAD = registry.Head("squad_v2", rows=tuple(
    table.dense_rows("squad_v2", "start_logits/dense", "start_dense")
    + table.dense_rows("squad_v2", "end_logits/dense_0", "end_dense_0")
    + table.layer_norm_rows("squad_v2", "end_logits/LayerNorm", "end_layer_norm")
    + table.dense_rows("squad_v2", "end_logits/dense_1", "end_dense_1")
    + table.dense_rows("squad_v2", "answer_class/dense_0", "answer_class_dense_0")
    + table.dense_rows("squad_v2", "answer_class/dense_1", "answer_class_dense_1", bias=False)))
V2_KIND = registry.register(registry.ModelKind(
    name="squad_v2", model_class=AlbertSquadV2, heads=(V2_HEAD,), serving_spec=SquadV2Spec(), order=4,
    text_mode=SQUAD_TEXT))
