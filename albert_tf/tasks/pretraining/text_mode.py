"""The `masked` text mode of `albert_tf.AlbertPreprocessor`: single sentences or pairs in which each literal
`[MASK]` becomes the mask id, plus `masked_lm_positions` and `masked_lm_weights` int32
`[batch, max_predictions_per_seq]` (the first masks; 0 after them), the inputs of `AlbertPretrainer`."""

from albert_tf.text import modes


def _pack_masked(preprocessor, text_a, text_b):
    features = preprocessor.pipeline.pack_masked_texts(text_a, text_b, width=preprocessor.max_predictions_per_seq)
    features["masked_lm_positions"] = features.pop("mlm_positions")
    features["masked_lm_weights"] = features.pop("mlm_weights")
    return features


# The original's `--max_predictions_per_seq`: the mask slots of raw text and of the pretraining tf.Examples.
MAX_PREDICTIONS_PER_SEQ = modes.Length("max_predictions_per_seq", 20,
                                       "Pretrainer tf.Example `masked_lm_positions` length.")
MASKED = modes.TextMode(name="masked", pack_pairs=_pack_masked, lengths=(MAX_PREDICTIONS_PER_SEQ,))
