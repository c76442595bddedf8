"""Checkpoint reading/writing against fabricated Google-format checkpoints (the original's names and layouts).

References are independent of `albert_tf.checkpoints`: checkpoints are written with `tf.compat.v1` variables and
`Saver` under the original names; outputs are checked against `tests/numpy_reference.py` (a NumPy transcription
of the original forward pass) and, for G=K=1, against tf-models-official's converter + `AlbertEncoder` (tf_keras),
whose outputs tests/references/make_tfm_references.py stores.
"""

import json
import logging as py_logging
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as ref
from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer
from albert_tf.checkpoints import (
    convert,
    init_from_checkpoint,
    init_groups_from_group0,
    load_pretrained,
    resolve_source,
    save_tf1_checkpoint,
)
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.training import loop
from original_checkpoints import write_google_checkpoint
import repo_paths

BASE = dict(vocab_size=97, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=24,
            max_position_embeddings=32, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, initializer_range=0.02)
CONFIGS = {
    "G1K1": dict(BASE, num_hidden_layers=3, num_hidden_groups=1, inner_group_num=1),
    "G2K2": dict(BASE, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2),
    "E_eq_H": dict(BASE, embedding_size=16, num_hidden_layers=2, num_hidden_groups=1, inner_group_num=1),
}
SPM_BYTES = b"fake sentencepiece model bytes"


# --- fixtures written without albert_tf.checkpoints ----------------------------------------------------------


def write_release_dir(directory, config, weights):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "albert_config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(directory, "30k-clean.model"), "wb") as f:
        f.write(SPM_BYTES)
    write_google_checkpoint(weights, os.path.join(directory, "model.ckpt-best"))
    return directory


def read_all(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def model_weights(weights):
    """The checkpoint dict minus optimizer slots and global_step."""
    return {k: v for k, v in weights.items()
            if k != "global_step" and not k.endswith(("/adam_m", "/adam_v"))}


def make_inputs(batch=2, seq=8, vocab=97, seed=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 5:] = 0
    seg = np.zeros((batch, seq), np.int32)
    seg[:, 4:] = 1
    return ids, mask, seg


def as_dict_inputs(ids, mask, seg):
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)}


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """One release directory per config, with random weights and pretraining heads."""
    root = tmp_path_factory.mktemp("releases")
    out = {}
    for i, (key, config) in enumerate(CONFIGS.items()):
        weights = ref.random_weights(config, np.random.default_rng(100 + i), heads=True)
        directory = write_release_dir(str(root / f"albert_{key}"), config, weights)
        out[key] = (directory, config, weights)
    return out


# --- numerics -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(CONFIGS))
def test_encoder_matches_numpy_reference(releases, key):
    directory, config, weights = releases[key]
    model = AlbertModel.from_pretrained(directory)
    ids, mask, seg = make_inputs()
    out = model(as_dict_inputs(ids, mask, seg), training=False)
    expected = ref.albert_forward(weights, config, ids, mask, seg)
    np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=1e-5)
    assert len(out["encoder_outputs"]) == config["num_hidden_layers"] * config["inner_group_num"]
    for ours, theirs in zip(out["encoder_outputs"], expected["all_encoder_layers"]):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    has_projection = model.embedding_projection is not None
    assert has_projection == (config["embedding_size"] != config["hidden_size"])


@pytest.mark.parametrize("key", ["G1K1", "G2K2"])
def test_pretraining_heads_match_numpy(releases, key):
    directory, config, weights = releases[key]
    model = AlbertPretrainer.from_pretrained(directory)
    ids, mask, seg = make_inputs()
    positions = np.array([[1, 3, 6], [0, 2, 4]], np.int32)
    inputs = dict(as_dict_inputs(ids, mask, seg), masked_lm_positions=tf.constant(positions))
    out = model(inputs, training=False)
    enc = ref.albert_forward(weights, config, ids, mask, seg)
    mlm, sop = ref.pretraining_heads(weights, config, enc["sequence_output"], enc["pooled_output"], positions)
    np.testing.assert_allclose(out["mlm_logits"], mlm, atol=1e-4)
    np.testing.assert_allclose(out["sop_logits"], sop, atol=1e-5)


def test_matches_tf_models_converter(releases, tmp_path):
    """G=K=1: tf-models' converter + AlbertEncoder (tf_keras) on Google's and on our checkpoint of this release,
    stored by tests/references/make_tfm_references.py; our checkpoint still has the names it converted."""
    reference = np.load(os.path.join(repo_paths.REFERENCES, "tfm_checkpoint.npz"))
    directory, config, weights = releases["G1K1"]
    ids, mask, seg = make_inputs()
    for name, value in (("ids", ids), ("mask", mask), ("seg", seg)):
        np.testing.assert_array_equal(reference[name], value, err_msg=f"{name}: regenerate the references")
    model = AlbertModel.from_pretrained(directory)
    ours = read_all(save_tf1_checkpoint(model, str(tmp_path / "ours" / "model.ckpt-best")))
    assert sorted(ours) == sorted(reference["ours_names"].tolist())
    for name in ours:
        if name in weights:
            np.testing.assert_array_equal(ours[name], weights[name], err_msg=name)
    out = model(as_dict_inputs(ids, mask, seg), training=False)
    for tag in ("google", "ours"):
        np.testing.assert_allclose(out["sequence_output"], reference[tag + "_sequence_output"], atol=1e-5)
        np.testing.assert_allclose(out["pooled_output"], reference[tag + "_pooled_output"], atol=1e-5)


# --- source forms ---------------------------------------------------------------------------------------------

def _assert_loaded(model, weights):
    np.testing.assert_array_equal(model.embeddings.word_embeddings.numpy(),
                                  weights["bert/embeddings/word_embeddings"])
    np.testing.assert_array_equal(
        model.groups[0][0].ffn_output.kernel.numpy(),
        weights["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel"])


def test_every_source_form_loads(releases, tmp_path, caplog):
    directory, config, weights = releases["G1K1"]
    prefix = os.path.join(directory, "model.ckpt-best")
    # Release tarball: one top-level folder.
    tarball = str(tmp_path / "albert_g1k1.tar.gz")
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(directory, arcname="albert_g1k1")
    # TF-Hub TF1 module: variables/variables with `module/` names, assets/.
    hub = tmp_path / "hub_module"
    write_google_checkpoint(weights, str(hub / "variables" / "variables"), name_prefix="module/",
                            optimizer_slots=False)
    (hub / "assets").mkdir()
    (hub / "assets" / "albert_config.json").write_text(json.dumps(config))
    (hub / "assets" / "30k-clean.model").write_bytes(SPM_BYTES)
    (hub / "tfhub_module.pb").write_bytes(b"")
    hub_tarball = str(tmp_path / "hub_module.tar.gz")
    with tarfile.open(hub_tarball, "w:gz") as tar:
        for entry in ("variables", "assets", "tfhub_module.pb"):
            tar.add(str(hub / entry), arcname=entry)
    # A model_dir with a `checkpoint` state file and two checkpoints: the latest is used.
    model_dir = tmp_path / "model_dir"
    old = dict(weights, **{"bert/embeddings/word_embeddings": weights["bert/embeddings/word_embeddings"] * 0})
    write_google_checkpoint(old, str(model_dir / "model.ckpt-1"), state_file=True)
    write_google_checkpoint(weights, str(model_dir / "model.ckpt-2"), state_file=True)
    (model_dir / "albert_config.json").write_text(json.dumps(config))

    forms = {
        "prefix": (prefix, "checkpoint"),
        "index": (prefix + ".index", "checkpoint"),
        "data": (prefix + ".data-00000-of-00001", "checkpoint"),
        "release_dir": (directory, "release_dir"),
        "tarball": (tarball, "archive:release_dir"),
        "hub": (str(hub), "tfhub_module"),
        "hub_tarball": (hub_tarball, "archive:tfhub_module"),
        "model_dir": (str(model_dir), "checkpoint_dir"),
    }
    extracted = []
    for form, (path, kind) in forms.items():
        with resolve_source(path) as source:
            assert source.kind == kind, form
            assert source.config_file is not None, form
            extracted.append(os.path.dirname(source.config_file))
            if form != "model_dir":
                assert open(source.spm_model_file, "rb").read() == SPM_BYTES, form
        with caplog.at_level(py_logging.WARNING):
            caplog.clear()
            model = AlbertModel.from_pretrained(path)
        _assert_loaded(model, weights)
        if form in ("index", "data"):
            assert any(prefix in r.getMessage() for r in caplog.records), form
    # Archives were extracted to temporary directories that are gone now.
    assert not os.path.exists(extracted[list(forms).index("tarball")])
    assert not os.path.exists(extracted[list(forms).index("hub_tarball")])


def test_unsafe_tarball_is_rejected(tmp_path):
    evil = tmp_path / "evil.tar.gz"
    payload = tmp_path / "payload.txt"
    payload.write_text("x")
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(str(payload), arcname="../escaped.txt")
    with pytest.raises(ValueError, match="evil.tar.gz"):
        with resolve_source(str(evil)):
            pass
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_missing_source_names_expected_forms(tmp_path):
    with pytest.raises(FileNotFoundError, match="release directory"):
        with resolve_source(str(tmp_path / "nothing" / "model.ckpt-best")):
            pass
    with pytest.raises(FileNotFoundError, match="No checkpoint in directory"):
        with resolve_source(str(tmp_path)):
            pass


# --- writing back ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["G2K2", "E_eq_H"])
def test_round_trip_tf1_keras_tf1_is_exact(releases, tmp_path, key):
    directory, _, _ = releases[key]
    original = model_weights(read_all(os.path.join(directory, "model.ckpt-best")))
    model = AlbertPretrainer.from_pretrained(directory)
    prefix = save_tf1_checkpoint(model, str(tmp_path / "out" / "model.ckpt-best"))
    written = read_all(prefix)
    assert sorted(written) == sorted(original)
    for name, value in original.items():
        assert written[name].dtype == np.float32
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    assert sorted(os.listdir(tmp_path / "out")) == ["model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index"]


# --- errors ---------------------------------------------------------------------------------------------------

def test_errors_list_every_offending_name(releases, tmp_path):
    _, config, weights = releases["G1K1"]
    block = "bert/encoder/transformer/group_0/inner_group_0"
    broken = dict(weights)
    del broken[f"{block}/LayerNorm/gamma"]
    del broken["bert/pooler/dense/bias"]
    broken["bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta"] = np.ones(16, np.float32)
    broken["bert/something_else"] = np.ones(3, np.float32)
    broken[f"{block}/ffn_1/intermediate/dense/kernel"] = np.ones((16, 25), np.float32)
    prefix = write_google_checkpoint(broken, str(tmp_path / "broken" / "model.ckpt-best"))
    model = AlbertModel(config)
    before = model.embeddings.word_embeddings.numpy().copy()
    with pytest.raises(ValueError) as info:
        init_from_checkpoint(model, prefix)
    message = str(info.value)
    for name in (f"{block}/LayerNorm/gamma", "bert/pooler/dense/bias",
                 "bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta", "bert/something_else",
                 f"{block}/ffn_1/intermediate/dense/kernel"):
        assert name in message
    assert "[16, 25]" in message and "[16, 24]" in message
    assert "adam_m" not in message and "global_step" not in message
    # Nothing is assigned when the check fails.
    np.testing.assert_array_equal(model.embeddings.word_embeddings.numpy(), before)


def test_heads_missing_ignored_and_partial(releases, tmp_path):
    directory, config, weights = releases["G1K1"]
    # Pretraining checkpoint into a classifier: the classifier head is absent (allowed by default).
    classifier = load_pretrained(AlbertClassifier, directory, num_labels=3)
    _assert_loaded(classifier.encoder, weights)
    with pytest.raises(ValueError, match="output_weights") as info:
        load_pretrained(AlbertClassifier, directory, num_labels=3, allow_missing_heads=False)
    assert "output_bias" in str(info.value)
    # Extra pretraining heads are ignored (and reported) when loading an encoder.
    result = init_from_checkpoint(AlbertModel(config), directory)
    assert set(result.ignored) == {name for name in weights if name.startswith("cls/")}
    assert result.skipped == 2 * len(weights) + 1
    # Half a head is an error even with allow_missing_heads.
    partial = {k: v for k, v in weights.items() if k != "cls/seq_relationship/output_bias"}
    prefix = write_google_checkpoint(partial, str(tmp_path / "partial" / "model.ckpt-best"))
    with pytest.raises(ValueError, match="cls/seq_relationship/output_bias"):
        init_from_checkpoint(AlbertPretrainer(config), prefix)


# --- task heads (the original task scripts' variables) ------------------------------------------------------

def _task_head_weights(kind, hidden, rng):
    def n(*shape):
        return rng.normal(0.0, 0.3, size=shape).astype(np.float32)

    if kind == "classifier":
        return {"output_weights": n(3, hidden), "output_bias": n(3)}
    if kind == "race":
        return {"output_weights": n(1, hidden), "output_bias": n(1)}
    if kind == "squad_v1":
        return {"cls/squad/output_weights": n(2, hidden), "cls/squad/output_bias": n(2)}
    return {
        "start_logits/dense/kernel": n(hidden, 1), "start_logits/dense/bias": n(1),
        "end_logits/dense_0/kernel": n(2 * hidden, hidden), "end_logits/dense_0/bias": n(hidden),
        "end_logits/LayerNorm/beta": n(hidden), "end_logits/LayerNorm/gamma": 1.0 + n(hidden),
        "end_logits/dense_1/kernel": n(hidden, 1), "end_logits/dense_1/bias": n(1),
        "answer_class/dense_0/kernel": n(2 * hidden, hidden), "answer_class/dense_0/bias": n(hidden),
        "answer_class/dense_1/kernel": n(hidden, 1),
    }


TASKS = {
    "classifier": (AlbertClassifier, {"num_labels": 3}, lambda m: {
        "output_weights": m.classifier_head.output_weights, "output_bias": m.classifier_head.output_bias}),
    "race": (AlbertRace, {}, lambda m: {
        "output_weights": m.race_head.output_weights, "output_bias": m.race_head.output_bias}),
    "squad_v1": (AlbertSquadV1, {}, lambda m: {
        "cls/squad/output_weights": m.squad_head.output_weights, "cls/squad/output_bias": m.squad_head.output_bias}),
    "squad_v2": (AlbertSquadV2, {}, lambda m: {
        "start_logits/dense/kernel": m.start_dense.kernel, "start_logits/dense/bias": m.start_dense.bias,
        "end_logits/dense_0/kernel": m.end_dense_0.kernel, "end_logits/dense_0/bias": m.end_dense_0.bias,
        "end_logits/LayerNorm/beta": m.end_layer_norm.beta, "end_logits/LayerNorm/gamma": m.end_layer_norm.gamma,
        "end_logits/dense_1/kernel": m.end_dense_1.kernel, "end_logits/dense_1/bias": m.end_dense_1.bias,
        "answer_class/dense_0/kernel": m.answer_class_dense_0.kernel,
        "answer_class/dense_0/bias": m.answer_class_dense_0.bias,
        "answer_class/dense_1/kernel": m.answer_class_dense_1.kernel}),
}


@pytest.mark.parametrize("kind", list(TASKS))
def test_task_heads_read_and_write_original_names(releases, tmp_path, kind):
    _, config, weights = releases["G1K1"]
    cls, kwargs, variables_of = TASKS[kind]
    heads = _task_head_weights(kind, config["hidden_size"], np.random.default_rng(5))
    encoder_weights = {k: v for k, v in weights.items() if not k.startswith("cls/")}
    directory = tmp_path / kind
    prefix = write_google_checkpoint(dict(encoder_weights, **heads), str(directory / "model.ckpt-best"))
    (directory / "albert_config.json").write_text(json.dumps(config))
    model = cls.from_pretrained(str(directory), **kwargs)
    _assert_loaded(model.encoder, weights)
    for name, variable in variables_of(model).items():
        np.testing.assert_array_equal(variable.numpy(), heads[name], err_msg=name)
    written = read_all(save_tf1_checkpoint(model, str(tmp_path / "out" / "model.ckpt-best")))
    original = model_weights(read_all(prefix))
    assert sorted(written) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)


# --- our TF2 checkpoints, group-0 init ------------------------------------------------------------------------

def test_tf2_checkpoint_restores_across_classes(releases, tmp_path):
    directory, config, weights = releases["G2K2"]
    pretrainer = AlbertPretrainer.from_pretrained(directory)
    optimizer = tf.keras.optimizers.Adam(1e-3)
    optimizer.build(pretrainer.trainable_variables)
    # Written as the training loop writes (albert_tf.training.loop): model + optimizer + untracked variables.
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(optimizer=optimizer, **loop.checkpoint_objects(pretrainer)),
        str(tmp_path / "model_dir"), max_to_keep=2, checkpoint_name="model.ckpt")
    prefix = manager.save(checkpoint_number=7)
    ids, mask, seg = make_inputs()
    expected = ref.albert_forward(weights, config, ids, mask, seg)
    encoder = AlbertModel(config)
    result = init_from_checkpoint(encoder, prefix)
    assert result.format == "tf2" and set(result.ignored) == {"mlm_head", "sop_head"}
    out = encoder(as_dict_inputs(ids, mask, seg), training=False)
    np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"], atol=1e-5)
    # The model_dir itself (CheckpointManager's `checkpoint` file) resolves to the latest checkpoint.
    classifier = load_pretrained(AlbertClassifier, str(tmp_path / "model_dir"), config=config, num_labels=2)
    np.testing.assert_array_equal(classifier.encoder.embeddings.word_embeddings.numpy(),
                                  weights["bert/embeddings/word_embeddings"])
    restored = AlbertPretrainer(config)
    init_from_checkpoint(restored, prefix, allow_missing_heads=False)
    np.testing.assert_array_equal(restored.mlm_head.output_bias.numpy(), weights["cls/predictions/output_bias"])
    np.testing.assert_array_equal(restored.sop_head.output_weights.numpy(),
                                  weights["cls/seq_relationship/output_weights"])
    # The wording depends on whether Keras shows `AlbertModel.groups` to tf.train.Checkpoint.
    with pytest.raises(ValueError, match="group_1_inner_group_1|encoder variables"):
        init_from_checkpoint(AlbertModel(dict(config, num_hidden_groups=1, inner_group_num=2)), prefix)

    # A checkpoint of a bare AlbertModel restores into a pretrainer's encoder; its heads are reported missing.
    bare = tf.train.Checkpoint(**loop.checkpoint_objects(encoder)).save(str(tmp_path / "bare" / "ckpt"))
    pretrainer2 = AlbertPretrainer(config)
    result = init_from_checkpoint(pretrainer2, bare)
    assert result.missing_heads == ["mlm", "sop"]
    np.testing.assert_array_equal(pretrainer2.encoder.pooler.kernel.numpy(), weights["bert/pooler/dense/kernel"])
    # Same class: the task head comes back too, and converts to the original names.
    head = np.arange(2 * config["hidden_size"], dtype=np.float32).reshape(2, -1)
    classifier.classifier_head.output_weights.assign(head)
    task = tf.train.Checkpoint(**loop.checkpoint_objects(classifier)).save(str(tmp_path / "task" / "ckpt"))
    classifier2 = AlbertClassifier(config, num_labels=2)
    init_from_checkpoint(classifier2, task, allow_missing_heads=False)
    np.testing.assert_array_equal(classifier2.classifier_head.output_weights.numpy(), head)
    config_file = os.path.join(directory, "albert_config.json")
    result = convert(task, str(tmp_path / "task_tf1"), output_format="tf1", config_file=config_file)
    assert result["model"] == "AlbertClassifier"
    written = read_all(result["weights"])
    np.testing.assert_array_equal(written["output_weights"], head)
    assert "bert/encoder/transformer/group_1/inner_group_1/LayerNorm_1/gamma" in written


def test_init_groups_from_group0(releases):
    directory, _, weights = releases["G1K1"]
    config = dict(CONFIGS["G1K1"], num_hidden_layers=4, num_hidden_groups=2)
    model = AlbertPretrainer(config)
    assignment = init_groups_from_group0(model, directory)
    q = "attention_1/self/query/kernel"
    assert assignment[f"bert/encoder/transformer/group_1/inner_group_0/{q}"] == \
        f"bert/encoder/transformer/group_0/inner_group_0/{q}"
    expanded = dict(weights)
    for name, value in weights.items():
        if "/group_0/" in name:
            expanded[name.replace("/group_0/", "/group_1/")] = value
    ids, mask, seg = make_inputs()
    out = model.encoder(as_dict_inputs(ids, mask, seg), training=False)
    expected = ref.albert_forward(expanded, config, ids, mask, seg)
    np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"], atol=1e-5)
    np.testing.assert_array_equal(model.mlm_head.output_bias.numpy(), weights["cls/predictions/output_bias"])
    # A variable whose own name is in the checkpoint takes it (the original tries the exact name first).
    directory2, config2, weights2 = releases["G2K2"]
    model2 = AlbertModel(config2)
    assignment2 = init_groups_from_group0(model2, directory2)
    name = "bert/encoder/transformer/group_1/inner_group_1/LayerNorm/beta"
    assert assignment2[name] == name
    np.testing.assert_array_equal(model2.groups[1][1].attention_layer_norm.beta.numpy(), weights2[name])


# --- converter ------------------------------------------------------------------------------------------------

@pytest.mark.e2e
def test_convert_to_keras_and_cli_to_tf1(releases, tmp_path):
    directory, config, weights = releases["G2K2"]
    tarball = str(tmp_path / "albert.tar.gz")
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(directory, arcname="albert_g2k2")
    result = convert(tarball, str(tmp_path / "keras"), output_format="keras")
    assert result["model"] == "AlbertPretrainer"
    assert sorted(os.listdir(tmp_path / "keras")) == ["30k-clean.model", "albert_config.json", "model.weights.h5"]
    model = AlbertPretrainer(AlbertConfig.from_json_file(str(tmp_path / "keras" / "albert_config.json")))
    model.load_weights(str(tmp_path / "keras" / "model.weights.h5"))
    np.testing.assert_array_equal(model.sop_head.output_weights.numpy(), weights["cls/seq_relationship/output_weights"])
    value_kernel = "bert/encoder/transformer/group_1/inner_group_1/attention_1/self/value/kernel"
    np.testing.assert_array_equal(model.encoder.groups[1][1].attention.value.kernel.numpy(), weights[value_kernel])

    out_dir = tmp_path / "tf1"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-convert", f"--input={tarball}",
                           f"--output_dir={out_dir}", "--format=tf1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert sorted(os.listdir(out_dir)) == ["30k-clean.model", "albert_config.json",
                                           "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index"]
    written = read_all(str(out_dir / "model.ckpt-best"))
    original = model_weights(weights)
    assert sorted(written) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    assert json.loads((out_dir / "albert_config.json").read_text())["num_hidden_groups"] == 2
