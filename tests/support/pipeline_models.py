"""Models built for the pipeline tests, and the comparison of their nested results."""

import numpy as np
import tensorflow as tf


def built(model, choices=False, positions=False):
    """`model` after one call on a `[1, 8]` batch (`[1, 4, 8]` for multiple choice; `masked_lm_positions` for a
    pretrainer), so that its weights exist."""
    ids = tf.ones([1, 4, 8] if choices else [1, 8], tf.int32)
    inputs = {"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)}
    if positions:
        inputs["masked_lm_positions"] = tf.zeros([1, 2], tf.int32)
    model(inputs, training=False)
    return model


def assert_nested_close(got, expected, where="result"):
    """A pipeline's results (dicts, lists, floats, arrays, strings) equal, floats to 1e-5; `where` names the first
    difference."""
    if isinstance(expected, dict):
        assert set(got) == set(expected), where
        for key in expected:
            assert_nested_close(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_nested_close(g, e, f"{where}[{i}]")
    elif isinstance(expected, (float, np.ndarray, np.floating)):
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0, err_msg=where)
    else:
        assert got == expected, where
