"""The model-kind registry: the built-in kinds, a kind added by a test alone, and heads the registry does not map.

The toy token tagger below is defined and registered only here (`AlbertToyTagger`: TF1 `tagger/output_weights`,
`tagger/output_bias`; transformers' `AlbertForTokenClassification` `classifier.weight`, `classifier.bias`); the
converter, export, the Hugging Face writer and reader and `from_pretrained` must know it with no other edit.
References are NumPy on the stored arrays (read with the `safetensors` package) and the original names written
out literally.
"""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

import original_checkpoints as oc
from albert_tf import registry
from albert_tf.checkpoints import restore_checkpoint, table
from albert_tf.checkpoints.convert import convert, detect_model, model_class, models
from albert_tf.checkpoints.foreign import Link
from albert_tf.checkpoints.reader import CheckpointReader
from albert_tf.config import AlbertConfig
from albert_tf.export.saved_model import export_from_checkpoint, export_saved_model
from albert_tf.layers.heads import AlbertOutputProjection
from albert_tf import AlbertClassifier, AlbertModel, AlbertRace
from toy_tagger import AlbertToyTagger, CONFIG, TOY_HEAD, ToySpec


class ToyPartial(AlbertToyTagger):
    """Registered below with a row for `output_weights` only: its `output_bias` has no row."""


class ClassifierWithExtraHead(AlbertClassifier):
    """A classifier subclass with a head no kind declares."""

    def __init__(self, config=None, **kwargs):
        super().__init__(config, **kwargs)
        self.extra_head = AlbertOutputProjection(2, self.config.hidden_size, 0.02, name="extra")
        self.extra_head.build()


@pytest.fixture
def toy_kind():
    head = registry.Head(TOY_HEAD, rows=tuple(table.output_projection_rows(TOY_HEAD, "tagger", "tagger_head")),
                         hf_links=(Link("tagger/output_weights", "classifier.weight"),
                                   Link("tagger/output_bias", "classifier.bias")))
    kind = registry.register(registry.ModelKind(
        name="toy_tagger", model_class=AlbertToyTagger, heads=(head,), serving_spec=ToySpec(),
        hf_architecture="AlbertForToyTagging", labels_variable="tagger/output_weights"))
    yield kind
    registry.unregister(kind.name)


def _inputs(batch=2, seq=7, seed=3):
    rng = np.random.RandomState(seed)
    return {"input_ids": tf.constant(rng.randint(0, CONFIG["vocab_size"], (batch, seq)), tf.int32),
            "input_mask": tf.ones((batch, seq), tf.int32), "segment_ids": tf.zeros((batch, seq), tf.int32)}


def _release(model, directory):
    """A release directory: `albert_config.json` and `model.ckpt-best` with the original names, literally."""
    os.makedirs(directory, exist_ok=True)
    model.config.to_json_file(os.path.join(directory, "albert_config.json"))
    extra = []
    if isinstance(model, AlbertToyTagger):
        extra = [("tagger/output_weights", model.tagger_head.output_weights),
                 ("tagger/output_bias", model.tagger_head.output_bias)]
    oc.save_original_checkpoint(model, os.path.join(directory, "model.ckpt-best"), slots=(), extra=extra)
    return str(directory)


def test_builtin_kinds_in_order_with_their_classes_and_heads():
    assert registry.names() == ("encoder", "pretrainer", "classifier", "squad_v1", "squad_v2", "race",
                                "token_classifier")
    assert models() == ("auto",) + registry.names()
    assert model_class("race").__module__ == "albert_tf.tasks.race.model"
    assert model_class("race").__name__ == "AlbertRace"
    heads = {kind.name: [head.name for head in kind.heads] for kind in registry.kinds()}
    assert heads == {"encoder": [], "pretrainer": ["mlm", "sop"], "classifier": ["classifier"],
                     "squad_v1": ["squad_v1"], "squad_v2": ["squad_v2"], "race": ["race"],
                     "token_classifier": ["token_classification"]}
    names = {kind.name: sorted(kind.tf1_names) for kind in registry.kinds()}
    # The original's names (original-release.md section 4), written out.
    assert names["pretrainer"] == sorted([
        "cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/LayerNorm/beta", "cls/predictions/transform/LayerNorm/gamma",
        "cls/predictions/output_bias", "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"])
    assert names["classifier"] == names["race"] == ["output_bias", "output_weights"]
    assert names["squad_v1"] == ["cls/squad/output_bias", "cls/squad/output_weights"]
    assert registry.kind_of(ClassifierWithExtraHead).name == "classifier"
    with pytest.raises(ValueError, match="`model` must be one of encoder, pretrainer"):
        registry.get("bert")


def test_head_names_are_unique_across_kinds(toy_kind):
    clash = registry.ModelKind(name="other", model_class=ToyPartial, heads=toy_kind.heads)
    with pytest.raises(ValueError, match="already a head of `toy_tagger`"):
        registry.register(clash)
    assert "other" not in registry.names()


def test_builtin_checkpoint_names_are_the_originals():
    config = AlbertConfig(**CONFIG)
    for kind in registry.kinds():
        kwargs = kind.model_kwargs(3)
        model = kind.model_class(config, **kwargs)
        literal = {name: id(variable) for name, variable in oc.original_variables(model)}
        mapped = {name: id(target.variable) for name, target in table.model_targets(model).items()}
        assert mapped == literal, kind.name


def test_a_kind_registered_by_a_test_is_known_everywhere(toy_kind, tmp_path):
    config = AlbertConfig(**CONFIG)
    model = AlbertToyTagger(config, num_labels=5)
    release = _release(model, tmp_path / "release")
    assert detect_model(CheckpointReader(os.path.join(release, "model.ckpt-best"))) == ("toy_tagger",
                                                                                      {"num_labels": 5})
    expected = model(_inputs())["logits"].numpy()

    # from_pretrained: the original names, then our TF2 checkpoint.
    np.testing.assert_allclose(AlbertToyTagger.from_pretrained(release, num_labels=5)(_inputs())["logits"], expected,
                               rtol=1e-6, atol=1e-6)
    prefix = oc.save_our_checkpoint(model, str(tmp_path / "ours" / "model.ckpt-1"))
    restored = AlbertToyTagger(config, num_labels=5)
    assert restore_checkpoint(restored, prefix).loaded == ["encoder", "tagger_head"]
    np.testing.assert_allclose(restored(_inputs())["logits"], expected, rtol=1e-6, atol=1e-6)

    # --format=hf: transformers' AlbertForTokenClassification names; read back by from_pretrained.
    result = convert(release, str(tmp_path / "hf"), output_format="hf")
    assert result["model"] == "AlbertToyTagger"
    hf_config = json.load(open(tmp_path / "hf" / "config.json"))
    assert hf_config["architectures"] == ["AlbertForToyTagging"] and len(hf_config["id2label"]) == 5
    stored = load_file(str(tmp_path / "hf" / "model.safetensors"))
    weight, bias = stored["classifier.weight"], stored["classifier.bias"]
    np.testing.assert_array_equal(weight, model.tagger_head.output_weights.numpy())
    sequence = AlbertModel.from_pretrained(str(tmp_path / "hf"))(_inputs())["sequence_output"].numpy()
    np.testing.assert_allclose(sequence @ weight.T + bias, expected, rtol=1e-5, atol=1e-5)
    from_hf = AlbertToyTagger.from_pretrained(str(tmp_path / "hf"), num_labels=5)
    np.testing.assert_allclose(from_hf(_inputs())["logits"], expected, rtol=1e-5, atol=1e-5)
    # The same transformers names still read as the sequence classifier's in a sequence classifier's directory.
    classifier = AlbertClassifier(config, num_labels=5)
    convert(_release(classifier, tmp_path / "cls"), str(tmp_path / "hf_cls"), output_format="hf")
    np.testing.assert_array_equal(
        AlbertClassifier.from_pretrained(str(tmp_path / "hf_cls"), num_labels=5).classifier_head.output_weights,
        classifier.classifier_head.output_weights)

    # Export: the kind's serving spec, from a model and from a checkpoint (`--model=toy_tagger`).
    exported = export_from_checkpoint(release, str(tmp_path / "export"), model="toy_tagger", num_labels=5,
                                      max_seq_length=8)
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    np.testing.assert_allclose(serve(**_inputs())["logits"], expected, rtol=1e-5, atol=1e-5)
    assert os.path.isdir(export_saved_model(model, str(tmp_path / "export"), max_seq_length=8))


def test_head_variable_missing_from_registry_fails_tf2_restore(toy_kind, tmp_path):
    head = registry.Head("toy_partial", rows=(table.Row("toy_partial", "tagger/output_weights",
                                                        "tagger_head.output_weights"),))
    registry.register(registry.ModelKind(name="toy_partial", model_class=ToyPartial, heads=(head,)))
    try:
        config = AlbertConfig(**CONFIG)
        prefix = oc.save_our_checkpoint(ToyPartial(config), str(tmp_path / "partial" / "model.ckpt-1"))
        with pytest.raises(ValueError, match="tagger/output_bias") as error:
            restore_checkpoint(ToyPartial(config), prefix)
        oc.assert_short_error(str(error.value), prefix)
    finally:
        registry.unregister("toy_partial")


def test_unregistered_head_in_our_tf2_checkpoint_is_an_error(tmp_path):
    config = AlbertConfig(**CONFIG)
    prefix = oc.save_our_checkpoint(ClassifierWithExtraHead(config), str(tmp_path / "extra" / "model.ckpt-1"))
    # Into the class itself: its extra weights have no row.
    with pytest.raises(ValueError, match="extra/output_weights"):
        restore_checkpoint(ClassifierWithExtraHead(config), prefix)
    # Into the registered class: the checkpoint's `extra_head` has no place in any registered kind.
    with pytest.raises(ValueError, match="model/extra_head") as error:
        restore_checkpoint(AlbertClassifier(config), prefix)
    oc.assert_short_error(str(error.value), prefix)
    # A head of another registered kind is ignored, as before (a classifier's checkpoint into RACE's encoder).
    classifier_prefix = oc.save_our_checkpoint(AlbertClassifier(config), str(tmp_path / "cls" / "model.ckpt-1"))
    result = restore_checkpoint(AlbertRace(config), classifier_prefix, allow_missing_heads=True)
    assert result.ignored == ["classifier_head"] and result.missing_heads == ["race"]
    # The Keras model's own training state is not a head: a model saved after `compile` carries its optimizer.
    compiled = AlbertClassifier(config)
    compiled.compile()
    compiled.optimizer.build(compiled.trainable_variables)
    compiled_prefix = tf.train.Checkpoint(model=compiled).write(str(tmp_path / "compiled" / "ckpt"))
    assert CheckpointReader(compiled_prefix).tf2_children()["optimizer"] > 0
    assert restore_checkpoint(AlbertClassifier(config), compiled_prefix).loaded == ["encoder", "classifier_head"]


def test_the_documented_token_classifier_is_the_package_module(tmp_path):
    """docs/adding_a_task.md's registration excerpt is the text of `albert_tf/tasks/ner/model.py`, and that
    kind maps its names and converts to Hugging Face as the document says."""
    root = os.path.join(os.path.dirname(__file__), "..")
    text = open(os.path.join(root, "docs", "adding_a_task.md"), encoding="utf-8").read()
    (code,) = re.findall(r"```py\n(.*?)```", text, flags=re.S)
    module_text = open(os.path.join(root, "albert_tf", "tasks", "ner", "kind.py"), encoding="utf-8").read()
    assert code.strip() and code in module_text
    from albert_tf.tasks.ner.model import AlbertTokenClassifier
    assert registry.get("token_classifier").model_class is AlbertTokenClassifier
    model = AlbertTokenClassifier(AlbertConfig(**CONFIG), num_labels=4)
    assert model(_inputs())["logits"].shape == (2, 7, 4)
    names = {name: tuple(target.variable.shape) for name, target in table.model_targets(model).items()}
    assert names["token_classification/output_weights"] == (4, 16)
    assert names["token_classification/output_bias"] == (4,)
    release = str(tmp_path / "release")
    os.makedirs(release)
    model.config.to_json_file(os.path.join(release, "albert_config.json"))
    oc.save_original_checkpoint(model, os.path.join(release, "model.ckpt-best"), slots=())
    result = convert(release, str(tmp_path / "hf"), output_format="hf")
    assert result["model"] == "AlbertTokenClassifier"
    hf_config = json.load(open(tmp_path / "hf" / "config.json"))
    assert hf_config["architectures"] == ["AlbertForTokenClassification"]
    stored = load_file(str(tmp_path / "hf" / "model.safetensors"))
    np.testing.assert_array_equal(stored["classifier.weight"], model.token_classifier_head.output_weights)
    np.testing.assert_array_equal(stored["classifier.bias"], model.token_classifier_head.output_bias)
