"""The `pretrainer` model kind: the `masked` text mode of `albert_tf.AlbertPreprocessor` (single sentences or
pairs in which each literal `[MASK]` becomes the mask id, plus `masked_lm_positions` and `masked_lm_weights` int32
`[batch, max_predictions_per_seq]`: the first masks, 0 after them), how `AlbertPretrainer` is served, its checkpoint
names and its registration."""

import dataclasses

import tensorflow as tf

from albert_tf import options, registry
from albert_tf.checkpoints import table
from albert_tf.checkpoints.foreign import TRANSPOSE, Link
from albert_tf.data import features
from albert_tf.config import TOKEN_INPUTS
from albert_tf.serving_spec import ServingSpec
from albert_tf.tasks.pretraining.data import PRETRAINING
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.text import modes


def _pack_masked(preprocessor, text_a, text_b):
    features = preprocessor.pipeline.pack_masked_texts(text_a, text_b, width=preprocessor.max_predictions_per_seq)
    features["masked_lm_positions"] = features.pop("mlm_positions")
    features["masked_lm_weights"] = features.pop("mlm_weights")
    return features


# The original's `--max_predictions_per_seq`: the mask slots of raw text and of the pretraining tf.Examples.
# Its default and help are the shared option's (`MaskedLmOptions`), which the pretraining commands declare.
_FIELD = {field.name: field for field in dataclasses.fields(options.MaskedLmOptions)}["max_predictions_per_seq"]
MAX_PREDICTIONS_PER_SEQ = modes.Length(_FIELD.name, _FIELD.default, _FIELD.metadata["help"])
MASKED = modes.TextMode(name="masked", pack_pairs=_pack_masked, lengths=(MAX_PREDICTIONS_PER_SEQ,))


class PretrainerSpec(ServingSpec):
    """`AlbertPretrainer`: the TF-Hub `mlm` signature (masked-LM logits at `mlm_positions`) plus SOP.

    `serve_text` turns each literal `[MASK]` into the mask id and predicts every masked position.
    """

    pipeline_tasks = ("fill-mask", "feature-extraction")

    def token_specs(self):
        specs = super().token_specs()
        specs["mlm_positions"] = tf.TensorSpec([None, None], tf.int32, name="mlm_positions")
        return specs

    def model_inputs(self, features):
        inputs = super().model_inputs(features)
        inputs["masked_lm_positions"] = features["mlm_positions"]
        return inputs

    def outputs(self, out, threshold):
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"],
                "mlm_logits": out["mlm_logits"],                                         # [batch, P, V]
                "sop_log_probs": tf.nn.log_softmax(tf.cast(out["sop_logits"], tf.float32), axis=-1)}

    def example_spec(self, max_seq_length, lengths):
        names = TOKEN_INPUTS + ("masked_lm_positions",)
        return features.parse_spec(features.select(PRETRAINING, names), seq=max_seq_length,
                                   pred=lengths[MAX_PREDICTIONS_PER_SEQ.name])

    def example_features(self, parsed, max_seq_length):
        features, passthrough = super().example_features(parsed, max_seq_length)
        features["mlm_positions"] = tf.cast(parsed["masked_lm_positions"], tf.int32)
        return features, passthrough

    def text_features(self, pipeline, texts):
        return pipeline.pack_masked_texts(texts["text_a"], texts["text_b"])              # mlm_positions [batch, P]

    def text_outputs(self, outputs, features):
        outputs = super().text_outputs(outputs, features)
        outputs["mlm_positions"] = features["mlm_positions"]
        outputs["mlm_weights"] = features["mlm_weights"]
        outputs["mlm_predictions"] = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        return outputs

    def fixed_input_shapes(self, batch_size, max_seq_length, lengths):
        shapes = super().fixed_input_shapes(batch_size, max_seq_length, lengths)
        shapes["mlm_positions"] = [batch_size, lengths[MAX_PREDICTIONS_PER_SEQ.name]]
        return shapes

    def calibration_rows(self, fields, path, number, tokenizer, do_lower_case, shapes):
        """Sentence rows (the base's) with `mlm_positions` spread over each row's real pieces."""
        rows = super().calibration_rows(fields, path, number, tokenizer, do_lower_case, shapes)
        for row in rows:
            length = int(sum(row["input_mask"]))
            row["mlm_positions"] = [(1 + i) % max(1, length) for i in range(shapes["mlm_positions"][-1])]
        return rows


# `run_pretraining.py`'s `get_masked_lm_output` and `get_sentence_order_output`; the MLM output matrix is the tied
# `word_embeddings`. transformers' names as `AlbertForPreTraining`.
MLM_HEAD = registry.Head(
    "mlm",
    rows=tuple(table.dense_rows("mlm", "cls/predictions/transform/dense", "mlm_head.dense")
               + table.layer_norm_rows("mlm", "cls/predictions/transform/LayerNorm", "mlm_head.layer_norm")
               + [table.Row("mlm", "cls/predictions/output_bias", "mlm_head.output_bias")]),
    hf_links=(Link("cls/predictions/transform/dense/kernel", "predictions.dense.weight", TRANSPOSE),
              Link("cls/predictions/transform/dense/bias", "predictions.dense.bias"),
              Link("cls/predictions/transform/LayerNorm/gamma", "predictions.LayerNorm.weight"),
              Link("cls/predictions/transform/LayerNorm/beta", "predictions.LayerNorm.bias"),
              Link("cls/predictions/output_bias", "predictions.bias")))
SOP_HEAD = table.output_projection_head("sop", "cls/seq_relationship", "sop_head",
                                        hf_module="sop_classifier.classifier")
KIND = registry.register(registry.ModelKind(
    name="pretrainer", model_class=AlbertPretrainer, heads=(MLM_HEAD, SOP_HEAD), serving_spec=PretrainerSpec(),
    hf_architecture="AlbertForPreTraining", order=1, text_mode=MASKED, inherited_heads=True))
