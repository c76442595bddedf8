"""The `squad` text mode of `albert_tf.AlbertPreprocessor` and the `serve_text` packing of the SQuAD models:
a dict `question`, `context` -> `[CLS] question [SEP] context [SEP]` of the first document span (SQuAD
`convert_examples_to_features`; the question keeps its first `max_query_length` tokens), with `p_mask`."""

import tensorflow as tf

from albert_tf.errors import InputError
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
SQUAD = modes.TextMode(name="squad", keys=("question", "context"), layout="`question` and `context` (SQuAD)",
                       validate=_validate, pack=_pack, check=_check, lengths=(MAX_QUERY_LENGTH,))
