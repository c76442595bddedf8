"""A run's `model.ckpt-<step>` says what it holds, on every backend: every weight of the model is listed by
`tf.train.list_variables` under its path in the model (`model/...`), every optimizer slot under the weight it
belongs to (`optimizer/slots/<the weight's path>/<slot>`), none under the optimizer's positional lists; and a run
written in the former layout (`optimizer/_trainable_variables/<i>`) resumes to the uninterrupted run's weights.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import object_graph
from albert_tf.training import loop
from support import backend_runs

pytestmark = pytest.mark.e2e


def _keys(prefix):
    return [name for name, _ in tf.train.list_variables(prefix) if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]


def test_every_weight_is_listed_under_its_model_path(tmp_path):
    _, model, _ = backend_runs.train_classifier(tmp_path / "run", steps=2)
    keys = _keys(str(tmp_path / "run" / "model.ckpt-2"))
    expected = [key for key, _ in object_graph.variable_keys(object_graph.Node(model=model))]
    listed = {key[:-len(object_graph.VALUE_SUFFIX)] for key in keys}
    assert set(expected) <= listed, sorted(set(expected) - listed)[:5]
    assert not [key for key in keys if key.startswith(("optimizer/_trainable_variables", "optimizer/_variables"))]
    trainable = {id(v) for v in model.trainable_variables}
    for key, variable in object_graph.variable_keys(object_graph.Node(model=model)):
        if id(variable) in trainable:
            for slot in ("adam_m", "adam_v"):
                assert f"optimizer/slots/{key[len('model/'):]}/{slot}" in listed, key
    assert "optimizer/iteration" in listed


def test_a_run_in_the_former_layout_resumes(tmp_path):
    _, whole, _ = backend_runs.train_classifier(tmp_path / "whole", steps=6)
    cut_dir = tmp_path / "cut"
    _, model, optimizer = backend_runs.train_classifier(cut_dir, steps=2, schedule=6)
    prefix = str(cut_dir / "model.ckpt-2")
    for name in os.listdir(cut_dir):
        if name.startswith("model.ckpt-2."):
            os.remove(cut_dir / name)
    # The former layout: `tf.train.Checkpoint(model=, optimizer=)` as the runners wrote it.
    if backend_runs.backend() == "tensorflow":
        tf.train.Checkpoint(**loop.checkpoint_objects(model), optimizer=optimizer).write(prefix)
    else:
        object_graph.write(prefix, object_graph.checkpoint_root(model, optimizer))
    assert any(key.startswith("optimizer/_trainable_variables/") for key in _keys(prefix))
    result, resumed, _ = backend_runs.train_classifier(cut_dir, steps=6)
    assert result["global_step"] == 6
    for a, b in zip(backend_runs.weights(resumed), backend_runs.weights(whole)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert not any(key.startswith("optimizer/_") for key in _keys(str(cut_dir / "model.ckpt-6")))


@pytest.mark.skipif(backend_runs.backend() == "tensorflow", reason="compares another backend with TensorFlow")
def test_every_backend_writes_the_keys_tensorflow_writes(tmp_path):
    from fresh_process import run_measurement

    theirs = run_measurement("support.backend_runs", "listing", str(tmp_path / "tf"),
                             env={"KERAS_BACKEND": "tensorflow"})
    assert backend_runs.listing(tmp_path / "mine") == theirs
