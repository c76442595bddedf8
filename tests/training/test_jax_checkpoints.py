"""`albert_tf.checkpoints.object_graph` under JAX: a JAX process writes the TensorFlow runners' `model.ckpt-N`
(the same keys, shapes and dtypes as a TensorFlow-backend checkpoint of the same model and optimizer), reads one
that the TensorFlow backend wrote, and the TensorFlow runners' `tf.train.Checkpoint` restores what it wrote.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run); the TensorFlow side runs in a fresh
process under KERAS_BACKEND=tensorflow."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import object_graph
from fresh_process import run_measurement
import jax_training_fixtures as fixtures

pytestmark = pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX backend's checkpoints")
TF = {"KERAS_BACKEND": "tensorflow"}


def _listing(prefix):
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    return {key: (tuple(shape), dtypes[key].name) for key, shape in tf.train.list_variables(prefix)
            if key != "_CHECKPOINTABLE_OBJECT_GRAPH"}


@pytest.mark.e2e              # the TensorFlow side runs in its own processes
@pytest.mark.parametrize("kind", fixtures.KINDS)
def test_tensorflow_and_jax_checkpoints_are_one_format(kind, tmp_path):
    tf_prefix = run_measurement("jax_training_fixtures", "tf_write", kind, str(tmp_path / "tf" / "ck"), 0.5,
                                env=TF)
    model, optimizer = fixtures.build(kind)
    root = object_graph.checkpoint_root(model, optimizer)
    # A TensorFlow run's checkpoint restores under JAX: every variable, the optimizer's slots and step included.
    assert object_graph.restore(tf_prefix, root, expect_partial=False) == []
    reader = tf.train.load_checkpoint(tf_prefix)
    for key, variable in object_graph.variable_keys(root):
        saved = reader.get_tensor(key + object_graph.VALUE_SUFFIX)
        np.testing.assert_array_equal(object_graph.host_value(variable), saved.astype(saved.dtype), err_msg=key)
    assert int(optimizer.iterations.numpy()) == reader.get_tensor(
        "optimizer/_iterations" + object_graph.VALUE_SUFFIX)

    # JAX writes what TensorFlow writes: the same keys, shapes and dtypes.
    fixtures.fill(model, optimizer, 2.0)
    jax_prefix = object_graph.write(str(tmp_path / "jax" / "ck"), root)
    assert _listing(jax_prefix) == _listing(tf_prefix)
    if kind == "classifier_lora_adamw":
        # The adapters are trainable: they are saved under `optimizer/_trainable_variables/<i>`, their shortest path.
        assert "lora/alpha/.ATTRIBUTES/VARIABLE_VALUE" in _listing(jax_prefix)

    # ... and the TensorFlow runners restore it: each value read back is the JAX one (a variable left out would keep
    # its initial value).
    back = run_measurement("jax_training_fixtures", "tf_restore", kind, jax_prefix, env=TF)
    back_reader, jax_reader = tf.train.load_checkpoint(back), tf.train.load_checkpoint(jax_prefix)
    for key in _listing(jax_prefix):
        np.testing.assert_array_equal(back_reader.get_tensor(key), jax_reader.get_tensor(key), err_msg=key)
    for key, variable in object_graph.variable_keys(root):
        if key != "lora/alpha":
            np.testing.assert_array_equal(jax_reader.get_tensor(key + object_graph.VALUE_SUFFIX),
                                          object_graph.host_value(variable).astype(
                                              jax_reader.get_tensor(key + object_graph.VALUE_SUFFIX).dtype),
                                          err_msg=key)


def test_a_model_alone_restores_and_another_shape_is_refused(tmp_path):
    model, optimizer = fixtures.build("pretrainer_lamb")
    fixtures.fill(model, optimizer, 1.0)
    prefix = object_graph.write(str(tmp_path / "ck"), object_graph.checkpoint_root(model, optimizer))
    # Without its optimizer: the encoder's variables are saved under `optimizer/_trainable_variables/<i>`.
    alone, _ = fixtures.build("pretrainer_lamb")
    assert object_graph.restore(prefix, object_graph.checkpoint_root(alone), expect_partial=False) == []
    for mine, theirs in zip(alone.variables, model.variables):
        np.testing.assert_array_equal(object_graph.host_value(mine), object_graph.host_value(theirs))
    other_config = dict(fixtures.CONFIG, vocab_size=41)
    import albert_tf
    other = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(other_config))
    before = [object_graph.host_value(v) for v in other.variables]
    with pytest.raises(ValueError, match=r"output_bias has shape \(40,\), the variable .* \(41,\)"):
        object_graph.restore(prefix, object_graph.checkpoint_root(other))
    for value, variable in zip(before, other.variables):       # nothing assigned
        np.testing.assert_array_equal(value, object_graph.host_value(variable))
