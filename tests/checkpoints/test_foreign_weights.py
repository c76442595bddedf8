"""Weights from TF2 SavedModels (tf-models), keras-hub presets and Hugging Face directories, and back.

Each foreign artifact is made by the foreign library itself where it is light: keras-hub writes its own
`AlbertBackbone` preset and runs it; tf-models-official's `AlbertEncoder` SavedModels, exported with its own
`export_tfhub_lib` and run by it (tf_keras), are stored with their outputs by
tests/references/make_tfm_references.py (tf-models-official pins TensorFlow 2.20); Hugging Face directories are
written with the `safetensors` library under transformers' documented names and run through keras-hub's own transformers
converter (`AlbertBackbone.from_preset(hf_dir)`), so no torch is needed. Our outputs must equal theirs.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile

import h5py
import keras_hub
import numpy as np
import pytest
import safetensors.numpy
import tensorflow as tf

import numpy_reference as ref
from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer
from albert_tf.checkpoints import (
    convert,
    init_from_checkpoint,
    resolve_source,
    save_tf1_checkpoint,
    source_num_labels,
    table,
)
from albert_tf.checkpoints.safetensors_io import SafetensorsFile, write_safetensors
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from foreign_fixtures import BASE, CONFIGS, SPM_BYTES, hf_state_dict, keras_hub_from_hf, make_inputs, write_hf_dir
import repo_paths


def ours(model, ids, mask, seg):
    out = model({"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)},
                training=False)
    return out["sequence_output"].numpy(), out["pooled_output"].numpy()


def keras_hub_outputs(backbone, ids, mask, seg):
    out = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": mask}, training=False)
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def assert_outputs_equal(a, b, atol=1e-5):
    # Padded query positions differ by design between implementations only if masks are applied to queries;
    # neither the original nor these libraries do, so all positions are compared.
    np.testing.assert_allclose(a[0], b[0], atol=atol)
    np.testing.assert_allclose(a[1], b[1], atol=atol)


# --- keras-hub presets ----------------------------------------------------------------------------------------

def keras_hub_backbone(config, seed, identity_projection=False):
    """keras-hub's own AlbertBackbone for `config`, every weight random (biases and LayerNorms too)."""
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config["vocab_size"], num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"], embedding_dim=config["embedding_size"],
        hidden_dim=config["hidden_size"], intermediate_dim=config["intermediate_size"],
        num_groups=config["num_hidden_groups"], num_inner_repetitions=config["inner_group_num"],
        dropout=0.0, max_sequence_length=config["max_position_embeddings"], num_segments=config["type_vocab_size"])
    rng = np.random.default_rng(seed)
    for weight in backbone.weights:
        weight.assign(rng.normal(scale=0.3, size=weight.shape).astype(np.float32))
    if identity_projection:
        backbone.embeddings_projection.kernel.assign(np.eye(config["hidden_size"], dtype=np.float32))
        backbone.embeddings_projection.bias.assign(np.zeros(config["hidden_size"], np.float32))
    return backbone


def save_keras_hub_preset(backbone, directory):
    backbone.save_to_preset(directory)
    os.makedirs(os.path.join(directory, "assets", "tokenizer"), exist_ok=True)
    with open(os.path.join(directory, "assets", "tokenizer", "vocabulary.spm"), "wb") as f:
        f.write(SPM_BYTES)
    return directory


@pytest.mark.parametrize("key", list(CONFIGS))
def test_keras_hub_preset_matches_keras_hub(key, tmp_path):
    config = CONFIGS[key]
    backbone = keras_hub_backbone(config, seed=11, identity_projection=key == "E_eq_H")
    preset = save_keras_hub_preset(backbone, str(tmp_path / "preset"))
    model = AlbertModel.from_pretrained(preset)
    for field, value in config.items():
        assert getattr(model.config, field) == value, field
    ids, mask, seg = make_inputs()
    assert_outputs_equal(ours(model, ids, mask, seg), keras_hub_outputs(backbone, ids, mask, seg))
    with resolve_source(preset) as source:
        assert source.kind == "keras_hub_preset"
        assert open(source.spm_model_file, "rb").read() == SPM_BYTES
        assert AlbertConfig.from_json_file(source.config_file).num_hidden_groups == config["num_hidden_groups"]


def test_keras_hub_weights_without_layer_name_attributes(tmp_path):
    """Weights files of Keras releases that do not record layer names are read by the functional layout."""
    config = CONFIGS["G2K2"]
    backbone = keras_hub_backbone(config, seed=13)
    preset = save_keras_hub_preset(backbone, str(tmp_path / "preset"))
    with h5py.File(os.path.join(preset, "model.weights.h5"), "r+") as handle:
        groups = []
        handle.visititems(lambda name, obj: groups.append(obj) if name.endswith("vars") else None)
        for group in groups:
            if "name" in group.attrs:
                del group.attrs["name"]
    model = AlbertModel.from_pretrained(preset)
    ids, mask, seg = make_inputs()
    assert_outputs_equal(ours(model, ids, mask, seg), keras_hub_outputs(backbone, ids, mask, seg))


def test_keras_hub_preset_archive(tmp_path):
    """Kaggle serves presets as `.tar.gz` archives with the files at the top."""
    backbone = keras_hub_backbone(CONFIGS["G1K1"], seed=15)
    preset = save_keras_hub_preset(backbone, str(tmp_path / "preset"))
    archive = str(tmp_path / "preset.tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        for name in os.listdir(preset):
            tar.add(os.path.join(preset, name), arcname=name)
    with resolve_source(archive) as source:
        assert source.kind == "archive:keras_hub_preset"
    model = AlbertModel.from_pretrained(archive)
    ids, mask, seg = make_inputs()
    assert_outputs_equal(ours(model, ids, mask, seg), keras_hub_outputs(backbone, ids, mask, seg))


def test_truncated_keras_hub_weights_name_the_file(tmp_path):
    backbone = keras_hub_backbone(CONFIGS["G1K1"], seed=14)
    preset = save_keras_hub_preset(backbone, str(tmp_path / "preset"))
    path = os.path.join(preset, "model.weights.h5")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.weights\.h5"):
        AlbertModel.from_pretrained(preset)


def test_keras_hub_projection_when_e_equals_h_must_be_identity(tmp_path):
    backbone = keras_hub_backbone(CONFIGS["E_eq_H"], seed=12)   # A random projection: not the original's.
    preset = save_keras_hub_preset(backbone, str(tmp_path / "preset"))
    with pytest.raises(ValueError, match="embedding_projection.*not the identity"):
        AlbertModel.from_pretrained(preset)


@pytest.mark.parametrize("key", list(CONFIGS))
def test_format_keras_hub_loads_in_keras_hub(key, tmp_path):
    config = CONFIGS[key]
    weights = ref.random_weights(config, np.random.default_rng(21), heads=False)
    model = AlbertModel(config)
    prefix = str(tmp_path / "src" / "model.ckpt-best")
    _assign_tf1(model, weights)
    save_tf1_checkpoint(model, prefix)
    _write_release_files(tmp_path / "src", config)
    result = convert(str(tmp_path / "src"), str(tmp_path / "kh"), output_format="keras_hub")
    assert result["weights"] == str(tmp_path / "kh" / "model.weights.h5")
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "kh"))
    ids, mask, seg = make_inputs()
    assert_outputs_equal(keras_hub_outputs(backbone, ids, mask, seg), ours(model, ids, mask, seg))
    tokenizer_file = tmp_path / "kh" / "assets" / "tokenizer" / "vocabulary.spm"
    assert tokenizer_file.read_bytes() == SPM_BYTES
    # Round trip: back into our model, every variable bit-identical.
    again = AlbertModel.from_pretrained(str(tmp_path / "kh"))
    for a, b in zip(model.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _write_release_files(directory, config):
    with open(os.path.join(directory, "albert_config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(directory, "30k-clean.model"), "wb") as f:
        f.write(SPM_BYTES)


def _assign_tf1(model, weights):
    """Sets our model from a TF1-name dict through the public TF1 checkpoint path (written with tf.compat.v1)."""
    targets = table.model_targets(model)
    for name, target in targets.items():
        target.variable.assign(weights[name])


# --- Hugging Face directories -----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(CONFIGS))
def test_hf_dir_matches_keras_hub_converter_and_numpy(key, tmp_path):
    config = CONFIGS[key]
    state, tf1 = hf_state_dict(config, np.random.default_rng(31))
    directory = write_hf_dir(str(tmp_path / "hf"), config, state)
    backbone = keras_hub_from_hf(directory)
    model = AlbertPretrainer.from_pretrained(directory)
    assert model.config.hidden_act == "gelu"
    ids, mask, seg = make_inputs()
    encoder_out = ours(model.encoder, ids, mask, seg)
    assert_outputs_equal(encoder_out, keras_hub_outputs(backbone, ids, mask, seg))
    # Heads (MLM, SOP) against the NumPy transcription of the original, on the TF1-name twin.
    positions = np.array([[1, 3, 6], [0, 2, 4]], np.int32)
    out = model({"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg),
                 "masked_lm_positions": tf.constant(positions)}, training=False)
    reference = ref.albert_forward(tf1, config, ids, mask, seg)
    mlm, sop = ref.pretraining_heads(tf1, config, reference["sequence_output"], reference["pooled_output"], positions)
    np.testing.assert_allclose(out["mlm_logits"], mlm, atol=1e-4)
    np.testing.assert_allclose(out["sop_logits"], sop, atol=1e-5)
    with resolve_source(directory) as source:
        assert source.kind == "hf_model" and open(source.spm_model_file, "rb").read() == SPM_BYTES


def test_hf_task_heads_and_unprefixed_names(tmp_path):
    config = CONFIGS["G1K1"]
    state, tf1 = hf_state_dict(config, np.random.default_rng(41), heads=("classifier",), num_labels=3)
    classifier = AlbertClassifier.from_pretrained(write_hf_dir(str(tmp_path / "cls"), config, state,
                                                               "AlbertForSequenceClassification"), num_labels=3)
    np.testing.assert_array_equal(classifier.classifier_head.output_weights.numpy(), tf1["output_weights"])
    np.testing.assert_array_equal(classifier.classifier_head.output_bias.numpy(), tf1["output_bias"])
    # AlbertForQuestionAnswering: no pooler in transformers; the SQuAD 1.1 model's qa head is read.
    state, tf1 = hf_state_dict(config, np.random.default_rng(42), heads=("qa",))
    del state["albert.pooler.weight"], state["albert.pooler.bias"]
    squad = AlbertSquadV1.from_pretrained(write_hf_dir(str(tmp_path / "qa"), config, state,
                                                       "AlbertForQuestionAnswering"))
    np.testing.assert_array_equal(squad.squad_head.output_weights.numpy(), tf1["cls/squad/output_weights"])
    # A bare AlbertModel state dict: no `albert.` prefix.
    state, tf1 = hf_state_dict(config, np.random.default_rng(43), heads=(), prefix="")
    encoder = AlbertModel.from_pretrained(write_hf_dir(str(tmp_path / "bare"), config, state, "AlbertModel"))
    np.testing.assert_array_equal(encoder.groups[0][0].ffn.kernel.numpy(),
                                  tf1["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"])


def test_hf_masked_lm_without_pooler_into_pretrainer(tmp_path):
    """transformers' AlbertForMaskedLM has no pooler and no SOP head: both keep their initial values."""
    config = CONFIGS["G2K2"]
    state, tf1 = hf_state_dict(config, np.random.default_rng(47), heads=("mlm",))
    del state["albert.pooler.weight"], state["albert.pooler.bias"], state["predictions.decoder.bias"]
    directory = write_hf_dir(str(tmp_path / "mlm"), config, state, "AlbertForMaskedLM")
    model = AlbertPretrainer.from_pretrained(directory)
    ids, mask, seg = make_inputs()
    positions = np.array([[1, 3, 6], [0, 2, 4]], np.int32)
    out = model({"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg),
                 "masked_lm_positions": tf.constant(positions)}, training=False)
    reference = ref.albert_forward(tf1, config, ids, mask, seg)
    tf1_with_sop = dict(tf1, **{"cls/seq_relationship/output_weights": model.sop_head.output_weights.numpy(),
                                "cls/seq_relationship/output_bias": model.sop_head.output_bias.numpy()})
    mlm, _ = ref.pretraining_heads(tf1_with_sop, config, reference["sequence_output"],
                                   reference["sequence_output"][:, 0], positions)
    np.testing.assert_allclose(out["mlm_logits"], mlm, atol=1e-4)
    with pytest.raises(ValueError, match="(?s)missing from the checkpoint.*cls/seq_relationship/output_weights"):
        convert(directory, str(tmp_path / "out"), model="pretrainer")
    assert convert(directory, str(tmp_path / "out"), output_format="hf")["model"] == "AlbertModel"


def test_hf_sharded_index(tmp_path):
    config = CONFIGS["G2K2"]
    state, tf1 = hf_state_dict(config, np.random.default_rng(51), heads=())
    directory = tmp_path / "sharded"
    write_hf_dir(str(directory), config, state, "AlbertModel")
    os.remove(directory / "model.safetensors")
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for file_name, part in shards.items():
        safetensors.numpy.save_file({n: state[n] for n in part}, str(directory / file_name))
        weight_map.update((n, file_name) for n in part)
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    model = AlbertModel.from_pretrained(str(directory))
    np.testing.assert_array_equal(model.embeddings.word_embeddings.numpy(), tf1["bert/embeddings/word_embeddings"])


def test_hf_unmatched_names_are_listed(tmp_path):
    config = CONFIGS["G1K1"]
    state, _ = hf_state_dict(config, np.random.default_rng(52), heads=())
    state["albert.encoder.albert_layer_groups.1.albert_layers.0.ffn.bias"] = np.zeros(24, np.float32)
    state["lm_head.weight"] = np.zeros((2, 2), np.float32)
    directory = write_hf_dir(str(tmp_path / "hf"), config, state, "AlbertModel")
    with pytest.raises(ValueError) as error:
        AlbertModel.from_pretrained(directory)
    message = str(error.value)
    assert "model.safetensors" in message and "lm_head.weight" in message
    assert "albert.encoder.albert_layer_groups.1.albert_layers.0.ffn.bias" in message


@pytest.mark.parametrize("key", list(CONFIGS))
def test_format_hf_is_transformers_layout_and_loads_in_keras_hub(key, tmp_path):
    config = CONFIGS[key]
    state, _ = hf_state_dict(config, np.random.default_rng(61))
    source = write_hf_dir(str(tmp_path / "src"), config, state)
    model = AlbertPretrainer.from_pretrained(source)
    save_tf1_checkpoint(model, str(tmp_path / "release" / "model.ckpt-best"))
    _write_release_files(str(tmp_path / "release"), config)
    convert(str(tmp_path / "release"), str(tmp_path / "out"), output_format="hf")
    out = str(tmp_path / "out")
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "spiece.model"]
    written = safetensors.numpy.load_file(os.path.join(out, "model.safetensors"))
    # Exactly transformers' AlbertForPreTraining state dict (decoder tied, both biases present).
    assert sorted(written) == sorted(state)
    for name, value in state.items():
        assert written[name].shape == value.shape and written[name].dtype == np.float32, name
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    hf_config = json.loads(open(os.path.join(out, "config.json")).read())
    assert hf_config["architectures"] == ["AlbertForPreTraining"] and hf_config["hidden_act"] == "gelu_new"
    backbone = keras_hub_from_hf(out)
    ids, mask, seg = make_inputs()
    assert_outputs_equal(keras_hub_outputs(backbone, ids, mask, seg), ours(model.encoder, ids, mask, seg))
    again = AlbertPretrainer.from_pretrained(out)
    for a, b in zip(model.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# --- safety and damaged files ------------------------------------------------------------------------------------

class _Trap:
    """Unpickling this writes a marker file: proof that a pickle was (not) loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickled_pytorch_source_is_refused_unread(tmp_path):
    config = CONFIGS["G1K1"]
    directory = tmp_path / "torch"
    directory.mkdir()
    hf_config = dict(config, model_type="albert", hidden_act="gelu_new")
    (directory / "config.json").write_text(json.dumps(hf_config))
    marker = tmp_path / "unpickled"
    (directory / "pytorch_model.bin").write_bytes(pickle.dumps(_Trap(str(marker))))
    (directory / "weights.pt").write_bytes(pickle.dumps(_Trap(str(marker))))
    for path in (directory, directory / "pytorch_model.bin", directory / "weights.pt"):
        with pytest.raises(ValueError, match="never unpickles.*safetensors"):
            AlbertModel.from_pretrained(str(path))
    with pytest.raises(ValueError, match="safetensors"):
        convert(str(directory), str(tmp_path / "out"), output_format="keras")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_truncated_safetensors_names_the_file(tmp_path):
    config = CONFIGS["G1K1"]
    state, _ = hf_state_dict(config, np.random.default_rng(71), heads=())
    directory = write_hf_dir(str(tmp_path / "hf"), config, state, "AlbertModel")
    path = os.path.join(directory, "model.safetensors")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-100])
    with pytest.raises(ValueError, match=r"model\.safetensors.*truncated"):
        AlbertModel.from_pretrained(directory)
    open(path, "wb").write(data[:5])
    with pytest.raises(ValueError, match=r"model\.safetensors"):
        AlbertModel.from_pretrained(directory)


def test_shape_mismatch_names_the_source(tmp_path):
    config = CONFIGS["G1K1"]
    state, _ = hf_state_dict(config, np.random.default_rng(72), heads=())
    directory = write_hf_dir(str(tmp_path / "hf"), dict(config, intermediate_size=20), state, "AlbertModel")
    with pytest.raises(ValueError, match=r"(?s)model\.safetensors.*shape mismatch"):
        AlbertModel.from_pretrained(directory)


def test_truncated_tf1_data_file_names_the_checkpoint(tmp_path):
    config = CONFIGS["G1K1"]
    model = AlbertModel(config)
    prefix = save_tf1_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-best"))
    data = prefix + ".data-00000-of-00001"
    content = open(data, "rb").read()
    open(data, "wb").write(content[: len(content) // 2])
    with pytest.raises(ValueError, match=r"model\.ckpt-best.* is damaged"):
        init_from_checkpoint(AlbertModel(config), prefix)


def test_safetensors_reader_and_writer_agree_with_the_library(tmp_path):
    rng = np.random.default_rng(81)
    tensors = {"a": rng.normal(size=(3, 4)).astype(np.float32), "b": np.arange(5, dtype=np.int64),
               "c": rng.normal(size=(2,)).astype(np.float16), "empty": np.zeros((0, 3), np.float32)}
    safetensors.numpy.save_file(tensors, str(tmp_path / "lib.safetensors"), metadata={"k": "v"})
    reader = SafetensorsFile(str(tmp_path / "lib.safetensors"))
    assert reader.metadata == {"k": "v"}
    for name, value in tensors.items():
        np.testing.assert_array_equal(reader.read(name), value)
    write_safetensors(str(tmp_path / "ours.safetensors"),
                      [(n, v.shape, v.dtype, (lambda v=v: v)) for n, v in tensors.items()], metadata={"k": "v"})
    loaded = safetensors.numpy.load_file(str(tmp_path / "ours.safetensors"))
    for name, value in tensors.items():
        assert loaded[name].dtype == value.dtype
        np.testing.assert_array_equal(loaded[name], value)


# --- tf-models-official TF2 SavedModel (export_tfhub_lib) ---------------------------------------------------------

@pytest.fixture(scope="module")
def tf_models_saved_models(tmp_path_factory):
    """The SavedModels tf-models-official's `export_tfhub_lib` wrote, with its outputs on `make_inputs()`
    (stored by tests/references/make_tfm_references.py)."""
    root = tmp_path_factory.mktemp("tf_models")
    with tarfile.open(os.path.join(repo_paths.REFERENCES, "tfm_saved_models.tar.gz")) as tar:
        tar.extractall(root, filter="data")
    reference = np.load(root / "result.npz")
    ids, mask, seg = make_inputs()
    for name, value in (("ids", ids), ("mask", mask), ("seg", seg)):
        np.testing.assert_array_equal(reference[name], value, err_msg=f"{name}: regenerate the references")
    return root, (ids, mask, seg), reference


@pytest.mark.parametrize("tag", ["E_ne_H", "E_eq_H"])
def test_tf_models_saved_model_matches_tf_models(tf_models_saved_models, tag):
    root, (ids, mask, seg), reference = tf_models_saved_models
    export = str(root / tag)
    with resolve_source(export) as source:
        assert source.kind == "tf2_saved_model"
        assert open(source.spm_model_file, "rb").read() == SPM_BYTES
        config = AlbertConfig.from_json_file(source.config_file)
    assert config.num_hidden_layers == (3 if tag == "E_ne_H" else 2) and config.num_attention_heads == 2
    assert config.hidden_act == "gelu"
    model = AlbertModel.from_pretrained(export)
    assert (model.embedding_projection is None) == (tag == "E_eq_H")
    assert_outputs_equal(ours(model, ids, mask, seg),
                         (reference[tag + "_sequence_output"], reference[tag + "_pooled_output"]))


def test_saved_model_converts_to_hf_and_keras_hub(tf_models_saved_models, tmp_path):
    root, (ids, mask, seg), reference = tf_models_saved_models
    expected = (reference["E_ne_H_sequence_output"], reference["E_ne_H_pooled_output"])
    for output_format in ("hf", "keras_hub"):
        out = str(tmp_path / output_format)
        result = convert(str(root / "E_ne_H"), out, output_format=output_format)
        assert result["model"] == "AlbertModel"
        load = keras_hub_from_hf if output_format == "hf" else keras_hub.models.AlbertBackbone.from_preset
        backbone = load(out)
        assert_outputs_equal(keras_hub_outputs(backbone, ids, mask, seg), expected)


def test_saved_model_without_metadata_asks_for_config(tf_models_saved_models, tmp_path):
    root, (ids, mask, seg), reference = tf_models_saved_models
    copy = tmp_path / "no_metadata"
    shutil.copytree(root / "E_ne_H", copy)
    os.remove(copy / "keras_metadata.pb")
    with pytest.raises(ValueError, match="albert_config_file"):
        AlbertModel.from_pretrained(str(copy))
    config = dict(BASE, num_hidden_layers=3, num_hidden_groups=1, inner_group_num=1)
    model = AlbertModel.from_pretrained(str(copy), config=config)
    assert_outputs_equal(ours(model, ids, mask, seg),
                         (reference["E_ne_H_sequence_output"], reference["E_ne_H_pooled_output"]))


def test_sources_resolve_again_from_their_prefix_and_count_labels(tmp_path, tf_models_saved_models):
    """What the runners and `albert-export` do with a resolved source: resolve `checkpoint_prefix` again."""
    config = CONFIGS["G1K1"]
    state, _ = hf_state_dict(config, np.random.default_rng(44), heads=("classifier",), num_labels=3)
    hf_dir = write_hf_dir(str(tmp_path / "cls"), config, state, "AlbertForSequenceClassification")
    root = tf_models_saved_models[0]
    for path, kind, labels in ((hf_dir, "hf_model", 3), (str(root / "E_ne_H"), "tf2_saved_model", None)):
        with resolve_source(path) as source:
            assert source.kind == kind
            with resolve_source(source.checkpoint_prefix) as again:
                assert again.kind == kind and again.directory == source.directory
        assert source_num_labels(path) == labels


@pytest.mark.e2e
def test_cli_hf_to_keras_hub_and_pickle_refusal(tmp_path):
    config = CONFIGS["G2K2"]
    state, _ = hf_state_dict(config, np.random.default_rng(45))
    hf_dir = write_hf_dir(str(tmp_path / "hf"), config, state)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    out = tmp_path / "kh"
    proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-convert", f"--input={hf_dir}",
                           f"--output_dir={out}", "--format=keras_hub"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert sorted(os.listdir(out)) == ["assets", "config.json", "metadata.json", "model.weights.h5", "tokenizer.json"]
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(out))
    ids, mask, seg = make_inputs()
    assert_outputs_equal(keras_hub_outputs(backbone, ids, mask, seg),
                         keras_hub_outputs(keras_hub_from_hf(hf_dir), ids, mask, seg))
    torch_dir = tmp_path / "torch"
    torch_dir.mkdir()
    (torch_dir / "config.json").write_text(json.dumps(dict(config, model_type="albert", hidden_act="gelu_new")))
    (torch_dir / "pytorch_model.bin").write_bytes(pickle.dumps(_Trap(str(tmp_path / "unpickled"))))
    proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-convert", f"--input={torch_dir}",
                           f"--output_dir={tmp_path / 'never'}", "--format=hf"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2 and "pytorch_model.bin" in proc.stderr and "safetensors" in proc.stderr
    assert not (tmp_path / "unpickled").exists() and not (tmp_path / "never").exists()


def test_format_hf_of_task_models(tmp_path):
    config = CONFIGS["G1K1"]
    classifier = AlbertClassifier(config, num_labels=3)
    rng = np.random.default_rng(46)
    for weight in classifier.weights:
        weight.assign(rng.normal(scale=0.3, size=weight.shape).astype(np.float32))
    save_tf1_checkpoint(classifier, str(tmp_path / "cls" / "model.ckpt-best"))
    _write_release_files(str(tmp_path / "cls"), config)
    convert(str(tmp_path / "cls"), str(tmp_path / "cls_hf"), output_format="hf")
    hf_config = json.loads((tmp_path / "cls_hf" / "config.json").read_text())
    assert hf_config["architectures"] == ["AlbertForSequenceClassification"] and len(hf_config["id2label"]) == 3
    written = safetensors.numpy.load_file(str(tmp_path / "cls_hf" / "model.safetensors"))
    np.testing.assert_array_equal(written["classifier.weight"], classifier.classifier_head.output_weights.numpy())
    again = AlbertClassifier.from_pretrained(str(tmp_path / "cls_hf"), num_labels=3)
    for a, b in zip(classifier.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    save_tf1_checkpoint(AlbertSquadV2(config), str(tmp_path / "v2" / "model.ckpt-best"))
    _write_release_files(str(tmp_path / "v2"), config)
    with pytest.raises(ValueError, match="SQuAD 2.0 head"):
        convert(str(tmp_path / "v2"), str(tmp_path / "v2_hf"), output_format="hf")
    assert not (tmp_path / "v2_hf").exists()
