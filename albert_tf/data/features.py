"""The TFRecord schema helpers: a schema is a tuple of `Feature(name, dtype, length)`.

Each task declares its own schema in its data module (`albert_tf.tasks.<task>.data`: the original
`create_pretraining_data.py`, `classifier_utils.py`, `squad_utils.py`, `race_utils.py` features), with the
original's names, dtypes and lengths, so TFRecords written by the original scripts and by this package are
interchangeable. Every reader parses with `parse_spec` and casts int64 to int32.
"""

import collections

import tensorflow as tf

from albert_tf.config import TOKEN_INPUTS
from albert_tf.errors import InputError

Feature = collections.namedtuple("Feature", ["name", "dtype", "length"])

# Lengths are symbolic: "seq" = max_seq_length, "scalar" = no dimension, an int = that length; a task's schema
# names its own (the pretraining schema's "pred" = max_predictions_per_seq, RACE's "choices_seq").


def tokens(length="seq"):
    """The int64 token features every ALBERT model takes, of `length` (the first three of every task's schema)."""
    return tuple(Feature(name, tf.int64, length) for name in TOKEN_INPUTS)


TOKENS = tokens()


def select(features, names):
    """The features of schema `features` named in `names`, in schema order (each name must be there)."""
    known = {feature.name for feature in features}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(f"Schema has no feature {', '.join(unknown)}; it has {', '.join(sorted(known))}.")
    return tuple(feature for feature in features if feature.name in names)


def parse_spec(features, defaults=None, **lengths):
    """`{name: tf.io.FixedLenFeature}` for a schema; `lengths` gives `seq=`, `pred=`, `choices_seq=`.

    `defaults` maps a feature name to the `default_value` used when a `tf.Example` lacks it (serving clients may
    leave out pass-through features such as SQuAD's `unique_ids`).

    Example: `parse_spec(albert_tf.tasks.pretraining.data.PRETRAINING, seq=128, pred=20)`.
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
