"""keras-hub task presets (`task.json`, `task.weights.h5` beside the backbone's files), made by keras-hub itself.

keras-hub's `AlbertTextClassifier(num_classes=3)` and `AlbertMaskedLM` are built on a tiny random `AlbertBackbone`,
saved with `save_to_preset` and run by keras-hub; `from_pretrained` of the preset must keep the head (class count,
weights) and the preprocessor's sequence length, and give keras-hub's logits.
"""

import json
import os

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import task_fixtures
from albert_tf import AlbertModel, AlbertPretrainer
from albert_tf.errors import InputError
from albert_tf.tasks.glue.model import AlbertClassifier

SEQUENCE_LENGTH = 24


@pytest.fixture(scope="module")
def presets(tmp_path_factory):
    """keras-hub's classifier and masked-LM presets on one random backbone, and their inputs and logits."""
    root = tmp_path_factory.mktemp("keras_hub_tasks")
    spm = task_fixtures.train_spm(str(root))
    tokenizer = keras_hub.models.AlbertTokenizer(proto=spm)
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2, num_groups=2,
        num_inner_repetitions=1, embedding_dim=8, hidden_dim=16, intermediate_dim=24, dropout=0.0,
        max_sequence_length=32)
    rng = np.random.default_rng(3)
    classifier = keras_hub.models.AlbertTextClassifier(
        backbone, num_classes=3,
        preprocessor=keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer, sequence_length=SEQUENCE_LENGTH))
    masked_lm = keras_hub.models.AlbertMaskedLM(
        backbone, preprocessor=keras_hub.models.AlbertMaskedLMPreprocessor(tokenizer,
                                                                           sequence_length=SEQUENCE_LENGTH))
    for weight in classifier.weights + masked_lm.weights:   # Every weight random: no default hides a misread.
        weight.assign(rng.normal(scale=0.3, size=weight.shape).astype(np.float32))
    features = classifier.preprocessor(["the quick brown fox jumps", "a lazy dog sleeps over there"])
    inputs = {key: np.asarray(features[key]) for key in ("token_ids", "segment_ids", "padding_mask")}
    positions = np.tile(np.arange(SEQUENCE_LENGTH, dtype=np.int32), (2, 1))
    result = {"inputs": {key: np.asarray(value) for key, value in inputs.items()}, "positions": positions,
              "classifier_logits": np.asarray(classifier(inputs, training=False)),
              "mlm_logits": np.asarray(masked_lm(dict(inputs, mask_positions=positions), training=False))}
    for name, task in (("classifier", classifier), ("masked_lm", masked_lm)):
        result[name] = str(root / name)
        task.save_to_preset(result[name])
    # keras-hub's MaskedLMHead normalises with epsilon 1e-5, the original's `cls/predictions` LayerNorm with 1e-12:
    # keras-hub's logits with the original's epsilon, to tell that difference from any other.
    masked_lm.masked_lm_head._intermediate_layer_norm.epsilon = 1e-12
    result["mlm_logits_eps12"] = np.asarray(masked_lm(dict(inputs, mask_positions=positions), training=False))
    return result


def our_inputs(presets):
    inputs = presets["inputs"]
    return {"input_ids": tf.constant(inputs["token_ids"], tf.int32),
            "input_mask": tf.constant(inputs["padding_mask"], tf.int32),
            "segment_ids": tf.constant(inputs["segment_ids"], tf.int32)}


def test_text_classifier_preset_keeps_its_head_and_sequence_length(presets):
    model = AlbertClassifier.from_pretrained(presets["classifier"], preprocessor=True)   # No `num_labels=`.
    assert model.num_labels == 3
    assert model.preprocessor.max_seq_length == SEQUENCE_LENGTH
    logits = model(our_inputs(presets), training=False)["logits"].numpy()
    np.testing.assert_allclose(logits, presets["classifier_logits"], atol=1e-5)


def test_masked_lm_preset_keeps_its_head(presets):
    model = AlbertPretrainer.from_pretrained(presets["masked_lm"])
    inputs = dict(our_inputs(presets), masked_lm_positions=tf.constant(presets["positions"]))
    logits = model(inputs, training=False)["mlm_logits"].numpy()
    np.testing.assert_allclose(logits, presets["mlm_logits_eps12"], atol=1e-5)
    # With keras-hub's own epsilon (1e-5, the original's is 1e-12) the logits move by a few 1e-5.
    np.testing.assert_allclose(logits, presets["mlm_logits"], atol=1e-4)


def test_a_head_that_cannot_be_read_raises(presets, tmp_path):
    import shutil
    directory = tmp_path / "other_task"
    shutil.copytree(presets["classifier"], directory)
    task = json.loads((directory / "task.json").read_text())
    task["class_name"] = "AlbertSomethingElse"
    (directory / "task.json").write_text(json.dumps(task))
    with pytest.raises(InputError, match="AlbertSomethingElse`, whose head albert_tf cannot read"):
        AlbertClassifier.from_pretrained(str(directory))
    with pytest.raises(InputError, match="cannot read"):
        AlbertModel.from_pretrained(str(directory))


def test_a_classifier_preset_with_another_label_count_asked_for_raises(presets):
    with pytest.raises(InputError, match="output_weights"):
        AlbertClassifier.from_pretrained(presets["classifier"], num_labels=2)


def test_our_keras_hub_preset_of_a_classifier_keeps_its_head_in_keras_hub(presets, tmp_path):
    from albert_tf.checkpoints import convert

    out = str(tmp_path / "ours")
    convert(presets["classifier"], out, output_format="keras_hub")
    assert {"task.json", "task.weights.h5", "preprocessor.json"} <= set(os.listdir(out))
    task = keras_hub.models.AlbertTextClassifier.from_preset(out)   # keras-hub reads our files.
    assert task.num_classes == 3
    logits = np.asarray(task(presets["inputs"], training=False))
    np.testing.assert_allclose(logits, presets["classifier_logits"], atol=1e-5)
    model = AlbertClassifier.from_pretrained(out)   # And we read them back.
    np.testing.assert_allclose(model(our_inputs(presets), training=False)["logits"].numpy(),
                               presets["classifier_logits"], atol=1e-5)
