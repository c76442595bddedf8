"""The `token_classifier` model kind: the in-graph packing of words, how `AlbertTokenClassifier` is served, its
checkpoint names and its registration."""

import tensorflow as tf

from albert_tf import registry
from albert_tf.checkpoints import table
from albert_tf.config import TOKEN_INPUTS
from albert_tf.serving_spec import ServingSpec, string_specs
from albert_tf.tasks.ner.model import HEAD_NAME, AlbertTokenClassifier
from albert_tf.text import ops as text_ops


def pack_words(pipeline, text):
    """Whitespace-separated words -> `[CLS] pieces [SEP]` features and each word's first-piece position.

    Each word is tokenized on its own (`preprocess_text` + SentencePiece, in the graph), as
    `albert_tf.tasks.ner.data` does; a word longer than `max_seq_length - 2` pieces keeps its first ones. Words
    past the first `max_seq_length - 2` pieces, and a word that normalises to nothing (combining marks only),
    are not packed: their position is -1 (`albert_tf.tasks.ner.data` tags the latter `O`).

    Args:
        pipeline: `albert_tf.text.ops.TextPipeline`.
        text: tf.string `[batch]`.

    Returns:
        dict of int32 `input_ids`, `input_mask`, `segment_ids` `[batch, L]` and `word_positions
        [batch, max words]` (-1 past a row's words).
    """
    words = tf.strings.split(text)                                                    # [batch, (w)]
    batch = tf.shape(text, out_type=tf.int64)[0]
    pieces = pipeline.tokenize(words.flat_values)                                    # [W, (p)]
    budget = pipeline.max_seq_length - 2
    pieces = pieces[:, :budget]
    lengths = pieces.row_lengths()                                                   # [W]
    row_ids = words.value_rowids()                                                   # [W]
    before = tf.concat([tf.cumsum(lengths, exclusive=True), tf.reduce_sum(lengths, keepdims=True)], 0)
    starts = tf.cumsum(lengths, exclusive=True) - tf.gather(before, tf.gather(words.row_starts(), row_ids))
    keep = (starts + lengths <= budget) & (lengths > 0)                              # [W]
    kept = tf.ragged.boolean_mask(pieces, keep)
    sequence = tf.RaggedTensor.from_value_rowids(kept, tf.boolean_mask(row_ids, keep), nrows=batch)
    sequence = sequence.merge_dims(1, 2)                                             # [batch, (n)]
    ones = tf.ones([batch], tf.int64)
    ids = tf.concat([text_ops.fill_rows(ones, pipeline.cls_id), sequence,
                     text_ops.fill_rows(ones, pipeline.sep_id)], axis=1)
    shape = [None, pipeline.max_seq_length]
    positions = tf.where(keep, tf.cast(starts, tf.int32) + 1, -1)
    return {"input_ids": ids.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
            "segment_ids": tf.zeros_like(ids).to_tensor(0, shape=shape),
            "word_positions": tf.RaggedTensor.from_value_rowids(positions, row_ids, nrows=batch).to_tensor(-1)}


class TokenClassifierSpec(ServingSpec):
    """`serving_default` / `serve_examples`: per-token logits, probabilities and predictions; `serve_text` takes
    `text` (whitespace-tokenised words, one sentence per row) and returns one tag per word: `tags [batch, words]`
    (`""` past a row's words), `predictions` (-1 there) and `scores` (the tag's probability), and the packed
    `input_ids`."""

    pipeline_tasks = ("token-classification",)

    def model_inputs(self, features):
        names = TOKEN_INPUTS + (("word_positions",) if "word_positions" in features else ())
        return {name: features[name] for name in names}

    def outputs(self, out, threshold):
        names = ("logits", "probabilities", "predictions", "word_tags", "word_predictions", "word_scores")
        return {name: out[name] for name in names if name in out}

    def text_specs(self):
        return string_specs(("text",))

    def text_features(self, pipeline, texts):
        return pack_words(pipeline, texts["text"])

    def text_outputs(self, outputs, features):
        return {"tags": outputs["word_tags"], "predictions": outputs["word_predictions"],
                "scores": outputs["word_scores"], "input_ids": features["input_ids"]}

    def export_facts(self, model):
        return {"num_labels": int(model.num_labels)}


HEAD = table.output_projection_head(HEAD_NAME, HEAD_NAME, "token_classifier_head", hf_module="classifier")
KIND = registry.register(registry.ModelKind(
    name="token_classifier", model_class=AlbertTokenClassifier, heads=(HEAD,), serving_spec=TokenClassifierSpec(),
    hf_architecture="AlbertForTokenClassification", labels_variable=f"{HEAD_NAME}/output_weights", order=6))
