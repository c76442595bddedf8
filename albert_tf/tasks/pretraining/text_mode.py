"""The `masked` text mode of `albert_tf.AlbertPreprocessor`: single sentences or pairs in which each literal
`[MASK]` becomes the mask id, plus `masked_lm_positions` and `masked_lm_weights` int32
`[batch, max_predictions_per_seq]` (the first masks; 0 after them), the inputs of `AlbertPretrainer`."""

import dataclasses

from albert_tf.text import modes
from albert_tf.training import options


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
