"""The pretraining TFRecord schema: the features of the original `create_pretraining_data.py`."""

import tensorflow as tf

from albert_tf.data.features import Feature, tokens

# "seq" = max_seq_length, "pred" = max_predictions_per_seq.
PRETRAINING = (
    *tokens(),
    Feature("token_boundary", tf.int64, "seq"),
    Feature("masked_lm_positions", tf.int64, "pred"),
    Feature("masked_lm_ids", tf.int64, "pred"),
    Feature("masked_lm_weights", tf.float32, "pred"),
    Feature("next_sentence_labels", tf.int64, 1),
)
