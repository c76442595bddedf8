"""The TFRecord schemas of the original release, in one table.

They are those written by the original `create_pretraining_data.py`, `classifier_utils.py`, `squad_utils.py`
and `race_utils.py`.

Feature names, dtypes and lengths are the original's, so TFRecords written by the original scripts and by
this package are interchangeable. Every reader parses with these specs and casts int64 to int32.
"""

import collections

import tensorflow as tf

from albert_tf.errors import InputError

Feature = collections.namedtuple("Feature", ["name", "dtype", "length"])

# Lengths are symbolic: "seq" = max_seq_length, "pred" = max_predictions_per_seq, "scalar" = no dimension.
PRETRAINING = (
    Feature("input_ids", tf.int64, "seq"),
    Feature("input_mask", tf.int64, "seq"),
    Feature("segment_ids", tf.int64, "seq"),
    Feature("token_boundary", tf.int64, "seq"),
    Feature("masked_lm_positions", tf.int64, "pred"),
    Feature("masked_lm_ids", tf.int64, "pred"),
    Feature("masked_lm_weights", tf.float32, "pred"),
    Feature("next_sentence_labels", tf.int64, 1),
)

# GLUE (`classifier_utils.file_based_convert_examples_to_features`): label_ids is float32 for STS-B.
CLASSIFIER = (
    Feature("input_ids", tf.int64, "seq"),
    Feature("input_mask", tf.int64, "seq"),
    Feature("segment_ids", tf.int64, "seq"),
    Feature("label_ids", tf.int64, "scalar"),
    Feature("is_real_example", tf.int64, "scalar"),
)

# SQuAD (`squad_utils.FeatureWriter`); the last three only in training files.
SQUAD = (
    Feature("unique_ids", tf.int64, "scalar"),
    Feature("input_ids", tf.int64, "seq"),
    Feature("input_mask", tf.int64, "seq"),
    Feature("segment_ids", tf.int64, "seq"),
    Feature("p_mask", tf.int64, "seq"),
)
SQUAD_TRAINING = (
    Feature("start_positions", tf.int64, "scalar"),
    Feature("end_positions", tf.int64, "scalar"),
    Feature("is_impossible", tf.int64, "scalar"),
)

# RACE (`race_utils`): the 4 choices concatenated, "choices_seq" = 4 * max_seq_length.
RACE_NUM_CHOICES = 4
RACE = (
    Feature("input_ids", tf.int64, "choices_seq"),
    Feature("input_mask", tf.int64, "choices_seq"),
    Feature("segment_ids", tf.int64, "choices_seq"),
    Feature("label_ids", tf.int64, "scalar"),
    Feature("is_real_example", tf.int64, "scalar"),
)


def select(features, names):
    """The features of schema `features` named in `names`, in schema order (each name must be there)."""
    known = {feature.name for feature in features}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(f"Schema has no feature {', '.join(unknown)}; it has {', '.join(sorted(known))}.")
    return tuple(feature for feature in features if feature.name in names)


def parse_spec(features, defaults=None, **lengths):
    """`{name: tf.io.FixedLenFeature}` for a schema above; `lengths` gives `seq=`, `pred=`, `choices_seq=`.

    `defaults` maps a feature name to the `default_value` used when a `tf.Example` lacks it (serving clients may
    leave out pass-through features such as SQuAD's `unique_ids`).

    Example: `parse_spec(PRETRAINING, seq=128, pred=20)`.
    """
    defaults = defaults or {}
    spec = {}
    for feature in features:
        if feature.length == "scalar":
            shape = []
        elif isinstance(feature.length, int):
            shape = [feature.length]
        else:
            if feature.length not in lengths:
                raise InputError(f"Schema feature `{feature.name}` needs the length `{feature.length}=`.")
            shape = [int(lengths[feature.length])]
        spec[feature.name] = tf.io.FixedLenFeature(shape, feature.dtype, default_value=defaults.get(feature.name))
    return spec


def cast_int64_to_int32(example):
    """The original's `_decode_record`: tf.Example has only int64, TPUs want int32."""
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t for name, t in example.items()}


def int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
