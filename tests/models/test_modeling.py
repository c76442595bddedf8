"""Foundation: config, layers and AlbertModel against the NumPy reference of the original `modeling.py`."""

import json
import os
import subprocess
import sys
import zlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import albert_tf
import albert_tf.tasks.pretraining.model
from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer

import numpy_reference as ref
from reference_weights import assign_from_tf1

TINY = dict(vocab_size=53, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=1,
            num_attention_heads=4, intermediate_size=24, inner_group_num=1, hidden_act="gelu",
            max_position_embeddings=16, type_vocab_size=2, initializer_range=0.02,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

LAYOUTS = {
    "shared_G1_K1": dict(TINY),
    "groups_L5_G2_K2": dict(TINY, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2),
    "no_projection_E_eq_H": dict(TINY, embedding_size=16),
    "relu": dict(TINY, hidden_act="relu"),
    "uneven_L12_G5": dict(TINY, num_hidden_layers=12, num_hidden_groups=5),
    "unshared_G_eq_L": dict(TINY, num_hidden_layers=3, num_hidden_groups=3),
    "tanh_linear": dict(TINY, hidden_act="tanh"),
}


def make_batch(config, rng, batch=3, seq=11):
    ids = rng.integers(0, config["vocab_size"], size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 7:] = 0          # padded positions
    mask[2, 4:] = 0
    seg = np.zeros((batch, seq), np.int32)
    seg[:, 5:] = 1
    return ids, mask, seg


def model_with_reference(layout, seed):
    """An AlbertModel with random original-named weights, a batch, and the NumPy reference's outputs on it."""
    config = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    w = ref.random_weights(config, rng)
    model = AlbertModel(AlbertConfig.from_dict(config))
    assign_from_tf1(model, w)
    ids, mask, seg = make_batch(config, rng)
    inputs = {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)}
    return model, inputs, ref.albert_forward(w, config, ids, mask, seg)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_numpy_parity(layout):
    config = LAYOUTS[layout]
    rng = np.random.default_rng(zlib.crc32(layout.encode()))
    w = ref.random_weights(config, rng)
    model = AlbertModel(AlbertConfig.from_dict(config))
    assign_from_tf1(model, w)
    ids, mask, seg = make_batch(config, rng)
    out = model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=False)
    want = ref.albert_forward(w, config, ids, mask, seg)
    np.testing.assert_allclose(out["sequence_output"].numpy(), want["sequence_output"], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out["pooled_output"].numpy(), want["pooled_output"], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out["embedding_output"].numpy(), want["embedding_output"], atol=1e-5, rtol=1e-5)
    assert len(out["encoder_outputs"]) == config["num_hidden_layers"] * config["inner_group_num"]
    for got, exp in zip(out["encoder_outputs"], want["all_encoder_layers"]):
        np.testing.assert_allclose(got.numpy(), exp, atol=1e-5, rtol=1e-5)


def _transposes(graph):
    """The number of `Transpose` nodes of a graph and of the functions it calls."""
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [node for fn in graph_def.library.function for node in fn.node_def]
    return sum(node.op == "Transpose" for node in nodes)


def _batch_matmuls(graph):
    """`BatchMatMul*` nodes of a graph and of the functions it calls, as `(name, adj_y)`."""
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [node for fn in graph_def.library.function for node in fn.node_def]
    return [(node.name, node.attr["adj_y"].b) for node in nodes if node.op.startswith("BatchMatMul")]


def test_static_batch_long_sequence_one_attention_matmul_per_layer():
    """A static batch at seq 512 (logits of 64 MiB per layer here) runs attention as one scores and one context
    batch-matmul per layer application, in the forward of a training call and in the whole training step (whose
    backward adds the two gradients of each), whatever the device."""
    config = AlbertConfig.from_dict(dict(TINY, hidden_size=32, num_attention_heads=8, intermediate_size=32,
                                         max_position_embeddings=512, num_hidden_layers=5, num_hidden_groups=2,
                                         inner_group_num=2))
    model = AlbertModel(config)
    applications = config.num_hidden_layers * config.inner_group_num
    spec = {name: tf.TensorSpec([8, 512], tf.int32) for name in ("input_ids", "input_mask", "segment_ids")}

    @tf.function(input_signature=[spec])
    def forward(inputs):
        return model(inputs, training=True)["sequence_output"]

    @tf.function(input_signature=[spec])
    def step(inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(inputs, training=True)["sequence_output"])
        return tape.gradient(loss, model.trainable_variables)

    matmuls = _batch_matmuls(forward.get_concrete_function().graph)
    assert len(matmuls) == 2 * applications, matmuls
    # The heads' four transposes per application (query, key -- laid out `[b, N, D, seq]` for the scores --,
    # value, context) and no other: the scores' matmul transposes nothing on its own.
    assert _transposes(forward.get_concrete_function().graph) == 4 * applications
    assert len(_batch_matmuls(step.get_concrete_function().graph)) == 6 * applications


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fused_training_ops_match_autodiff(dtype):
    """The training-time GELU, LayerNorm and softmax (fused XLA forward/backward) equal the plain ops and their
    autodiff gradients."""
    from albert_tf.layers import activations, tf_fast_path

    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(0, 2, (6, 5, 24)).astype(np.float32))
    upstream = tf.constant(rng.normal(0, 1, (6, 5, 24)).astype(np.float32))
    gamma = tf.constant(rng.normal(1, 0.1, (24,)).astype(np.float32))
    beta = tf.constant(rng.normal(0, 0.1, (24,)).astype(np.float32))

    def value_and_grads(fn, *args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            y = fn(*args)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * upstream)
        return [y] + tape.gradient(loss, list(args))

    tol = dict(atol=1e-5, rtol=1e-5) if dtype == "float32" else dict(atol=5e-2, rtol=2e-2)
    xd = tf.cast(x, dtype)
    cases = [
        (tf_fast_path.gelu_fused, lambda v: tf.nn.gelu(v, approximate=True), (xd,)),
        (tf_fast_path.gelu_fused, activations.gelu, (xd,)),
        (tf_fast_path.softmax_fused, tf.nn.softmax, (x,)),
        (lambda v, g, b: tf_fast_path.layer_norm_fused(v, g, b, 1e-12),
         lambda v, g, b: tf.nn.batch_normalization(v, *tf.nn.moments(v, axes=[-1], keepdims=True), b, g, 1e-12),
         (x, gamma, beta)),
    ]
    for fused, plain, args in cases:
        for got, want in zip(value_and_grads(fused, *args), value_and_grads(plain, *args)):
            np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(), tf.cast(want, tf.float32).numpy(),
                                       **tol)


def test_training_forward_and_gradients_match_unfused(monkeypatch):
    """`training=True` (fused GELU, LayerNorm and softmax backward) gives the NumPy reference's outputs and the
    gradients that autodiff of the plain ops gives."""
    from albert_tf.layers import activations, tf_fast_path

    model, inputs, want = model_with_reference("groups_L5_G2_K2", seed=11)

    def step():
        with tf.GradientTape() as tape:
            out = model(inputs, training=True)
            loss = tf.reduce_sum(out["sequence_output"] ** 2) + tf.reduce_sum(out["pooled_output"])
        return out["sequence_output"], tape.gradient(loss, model.trainable_variables)

    fused_out, fused_grads = tf.function(step)()
    np.testing.assert_allclose(fused_out.numpy(), want["sequence_output"], atol=1e-5, rtol=1e-5)
    # The plain ops in place of the fused ones (test-only substitution).
    monkeypatch.setattr(tf_fast_path, "gelu_fused", activations.gelu)
    monkeypatch.setattr(tf_fast_path, "softmax_fused", lambda v: tf.nn.softmax(v, axis=-1))
    monkeypatch.setattr(tf_fast_path, "layer_norm_fused", lambda v, g, b, eps: tf.nn.batch_normalization(
        v, *tf.nn.moments(v, axes=[-1], keepdims=True), b, g, eps))
    plain_out, plain_grads = tf.function(step)()
    np.testing.assert_allclose(plain_out.numpy(), want["sequence_output"], atol=1e-5, rtol=1e-5)
    for got, exp in zip(fused_grads, plain_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(got).numpy(), tf.convert_to_tensor(exp).numpy(),
                                   atol=2e-5, rtol=1e-4)


def test_layers_have_no_device_switches():
    """Inference traces of the encoder are plain TensorFlow ops (no XLA cluster, no op pattern meant for one
    backend's rewrite) that give the NumPy reference's numbers in graph and `jit_compile` functions alike."""
    model, inputs, want = model_with_reference("groups_L5_G2_K2", seed=13)

    def trace(**kwargs):
        return tf.function(lambda x: model(x, training=False)["sequence_output"], **kwargs
                           ).get_concrete_function(inputs)

    graph, jit = trace(), trace(jit_compile=True)
    for concrete in (graph, jit):
        np.testing.assert_allclose(concrete(inputs).numpy(), want["sequence_output"], atol=1e-5, rtol=1e-5)
    graph_def = graph.graph.as_graph_def()
    assert not [fn.signature.name for fn in graph_def.library.function if fn.attr["_XlaMustCompile"].b]
    ops = {node.op for node in graph_def.node}
    assert not {"FusedBatchNormV3", "PlaceholderWithDefault"} & ops, sorted(ops)


def test_pretrainer_heads_numpy_parity():
    config = LAYOUTS["groups_L5_G2_K2"]
    rng = np.random.default_rng(7)
    w = ref.random_weights(config, rng)
    pre = AlbertPretrainer(AlbertConfig.from_dict(config))
    assign_from_tf1(pre.encoder, w)
    pre.mlm_head.dense.kernel.assign(w["cls/predictions/transform/dense/kernel"])
    pre.mlm_head.dense.bias.assign(w["cls/predictions/transform/dense/bias"])
    pre.mlm_head.layer_norm.gamma.assign(w["cls/predictions/transform/LayerNorm/gamma"])
    pre.mlm_head.layer_norm.beta.assign(w["cls/predictions/transform/LayerNorm/beta"])
    pre.mlm_head.output_bias.assign(w["cls/predictions/output_bias"])
    pre.sop_head.output_weights.assign(w["cls/seq_relationship/output_weights"])
    pre.sop_head.output_bias.assign(w["cls/seq_relationship/output_bias"])
    ids, mask, seg = make_batch(config, rng)
    positions = np.array([[1, 3, 0], [2, 5, 6], [0, 0, 0]], np.int32)
    out = pre({"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions})
    enc = ref.albert_forward(w, config, ids, mask, seg)
    mlm, sop = ref.pretraining_heads(w, config, enc["sequence_output"], enc["pooled_output"], positions)
    np.testing.assert_allclose(out["mlm_logits"].numpy(), mlm, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out["sop_logits"].numpy(), sop, atol=1e-5, rtol=1e-5)


def test_pretraining_loss_matches_formula():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 7)).astype(np.float32)
    sop = rng.normal(size=(2, 2)).astype(np.float32)
    ids = np.array([[1, 2, 0], [6, 0, 0]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    labels = np.array([[1], [0]])
    total, mlm, so = albert_tf.tasks.pretraining.model.pretraining_loss(
        {"mlm_logits": logits, "sop_logits": sop},
        {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": labels})
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(lp, ids[..., None], -1)[..., 0]
    want_mlm = (weights * nll).sum() / (weights.sum() + 1e-5)
    slp = sop - np.log(np.exp(sop).sum(-1, keepdims=True))
    want_sop = -slp[np.arange(2), labels[:, 0]].mean()
    np.testing.assert_allclose(mlm.numpy(), want_mlm, rtol=1e-6)
    np.testing.assert_allclose(so.numpy(), want_sop, rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), want_mlm + want_sop, rtol=1e-6)
    # `sentence_loss_weight` scales only the sentence term of the total (0: the MLM loss alone).
    for weight in (0.0, 0.5):
        total_w, mlm_w, so_w = albert_tf.tasks.pretraining.model.pretraining_loss(
            {"mlm_logits": logits, "sop_logits": sop},
            {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": labels},
            sentence_loss_weight=weight)
        np.testing.assert_allclose(total_w.numpy(), want_mlm + weight * want_sop, rtol=1e-6)
        assert float(mlm_w) == float(mlm) and float(so_w) == float(so)


def test_output_shapes_and_group_assignment():
    config = AlbertConfig.from_dict(dict(TINY, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2))
    model = AlbertModel(config)
    assert model.layer_groups == [0, 0, 0, 1, 1]
    assert len(model.groups) == 2 and all(len(g) == 2 for g in model.groups)
    ids = tf.ones([2, 9], tf.int32)
    out = model({"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)})
    assert out["sequence_output"].shape == (2, 9, 16)
    assert out["pooled_output"].shape == (2, 16)
    assert out["embedding_output"].shape == (2, 9, 8)
    assert len(out["encoder_outputs"]) == 10
    assert all(t.dtype == tf.float32 for t in out["encoder_outputs"])
    assert AlbertConfig.from_dict(dict(TINY, num_hidden_layers=12, num_hidden_groups=5)).group_of_layer(5) == 2
    assert [AlbertConfig.from_dict(dict(TINY, num_hidden_layers=12, num_hidden_groups=5)).group_of_layer(i)
            for i in range(12)] == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4]


def test_no_projection_when_e_equals_h():
    model = AlbertModel(AlbertConfig.from_dict(dict(TINY, embedding_size=16)))
    assert model.embedding_projection is None
    assert not any("embedding_hidden_mapping_in" in v.path for v in model.weights)


def test_dropout_only_in_training():
    config = AlbertConfig.from_dict(dict(TINY, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3))
    model = AlbertModel(config)
    inputs = model.dummy_inputs(2, 8)
    a = model(inputs, training=False)["sequence_output"]
    b = model(inputs, training=False)["sequence_output"]
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = model(inputs, training=True)["sequence_output"]
    assert not np.allclose(a.numpy(), c.numpy())


@pytest.mark.parametrize("preset,expected", [("base_v2", 11683584), ("large_v1", 17683968),
                                             ("xlarge_v2", 58724864)])
def test_released_parameter_counts(preset, expected):
    assert AlbertModel(AlbertConfig.from_preset(preset)).count_params() == expected


def test_xxlarge_parameter_count_abstract():
    # Counted from the variable shapes without allocating the 0.9 GB model.
    c = AlbertConfig.from_preset("xxlarge_v2")
    V, E, H, I = c.vocab_size, c.embedding_size, c.hidden_size, c.intermediate_size
    emb = (V + c.type_vocab_size + c.max_position_embeddings) * E + 2 * E + E * H + H
    block = 4 * (H * H + H) + 2 * H + H * I + I + I * H + H + 2 * H
    assert emb + block + H * H + H == 222595584
    # The same formula gives the built model's count for a smaller config with the same structure.
    small = AlbertConfig.from_preset("base_v2")
    V, E, H, I = small.vocab_size, small.embedding_size, small.hidden_size, small.intermediate_size
    emb = (V + small.type_vocab_size + small.max_position_embeddings) * E + 2 * E + E * H + H
    block = 4 * (H * H + H) + 2 * H + H * I + I + I * H + H + 2 * H
    assert emb + block + H * H + H == AlbertModel(small).count_params()


def test_pretrainer_parameter_count_base():
    assert AlbertPretrainer(AlbertConfig.from_preset("base_v2")).count_params() == 11813810


def test_presets_dropout():
    assert AlbertConfig.from_preset("base_v1").hidden_dropout_prob == 0.1
    assert AlbertConfig.from_preset("xxlarge_v1").attention_probs_dropout_prob == 0.0
    for size in ("base", "large", "xlarge", "xxlarge"):
        c = AlbertConfig.from_preset(f"{size}_v2")
        assert c.hidden_dropout_prob == 0.0 and c.attention_probs_dropout_prob == 0.0
        assert c.vocab_size == 30000 and c.embedding_size == 128 and c.net_structure_type == 0
    assert AlbertConfig.from_preset("xxlarge_v2").layers_to_keep == []
    with pytest.raises(ValueError, match="Unknown preset `huge_v3`"):
        AlbertConfig.from_preset("huge_v3")


def test_config_json_round_trip_keeps_unknown_keys(tmp_path):
    released = {"attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
                "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
                "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
                "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000}
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(released))
    config = AlbertConfig.from_json_file(str(path))
    assert config.gap_size == 0 and config.num_memory_blocks == 0 and config.net_structure_type == 0
    text = config.to_json_string()
    assert json.loads(text) == released
    assert text == json.dumps(released, indent=2, sort_keys=True) + "\n"
    out = tmp_path / "out.json"
    config.to_json_file(str(out))
    assert AlbertConfig.from_json_file(str(out)) == config
    # Missing keys take the original defaults (xxlarge's).
    partial = AlbertConfig.from_dict({"vocab_size": 10})
    assert partial.hidden_size == 4096 and partial.num_attention_heads == 64 and partial.embedding_size == 128


@pytest.mark.parametrize("change,message", [
    (dict(hidden_size=18), "`hidden_size` must be divisible by `num_attention_heads`. Received: `hidden_size=18`"),
    (dict(num_hidden_groups=4), "`num_hidden_groups` must not exceed `num_hidden_layers`.*`num_hidden_groups=4`"),
    (dict(hidden_act="swish"), "`hidden_act` must be one of gelu, relu, tanh, linear. Received: `hidden_act='swish'`"),
    (dict(vocab_size=None), "`vocab_size` must be a positive integer. Received: `vocab_size=None`"),
    (dict(hidden_dropout_prob=1.5), "`hidden_dropout_prob` must be a float in"),
])
def test_config_errors(change, message):
    with pytest.raises(ValueError, match=message):
        AlbertModel(AlbertConfig.from_dict(dict(TINY, **change)))


def test_config_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        AlbertConfig.from_json_file(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{\"vocab_size\": 3,\n  oops}")
    with pytest.raises(ValueError, match=r"bad.json` is not valid JSON \(line 2"):
        AlbertConfig.from_json_file(str(bad))
    bad.write_text(json.dumps(dict(TINY, hidden_size=18)))
    with pytest.raises(ValueError, match="bad.json.*hidden_size=18"):
        AlbertConfig.from_json_file(str(bad))


def test_keras_save_load_and_config_round_trip(tmp_path):
    config = AlbertConfig.from_dict(dict(TINY, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2))
    model = AlbertModel(config)
    inputs = model.dummy_inputs(2, 6)
    want = model(inputs)["sequence_output"].numpy()
    clone = AlbertModel.from_config(model.get_config())
    assert clone.config == model.config
    path = str(tmp_path / "albert.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, AlbertModel)
    np.testing.assert_allclose(loaded(inputs)["sequence_output"].numpy(), want, atol=1e-6)
    pre = AlbertPretrainer(config)
    p_inputs = dict(inputs, masked_lm_positions=tf.constant([[1, 2], [0, 3]]))
    want = pre(p_inputs)["mlm_logits"].numpy()
    ppath = str(tmp_path / "pre.keras")
    pre.save(ppath)
    loaded = keras.saving.load_model(ppath)
    np.testing.assert_allclose(loaded(p_inputs)["mlm_logits"].numpy(), want, atol=1e-5)


def test_gelu_is_tanh_approximation():
    x = np.linspace(-5, 5, 101).astype(np.float32)
    np.testing.assert_allclose(albert_tf.layers.gelu(x).numpy(), ref.gelu(x.astype(np.float64)), atol=1e-6)
    np.testing.assert_allclose(albert_tf.layers.gelu(x).numpy(),
                               keras.activations.gelu(x, approximate=True).numpy(), atol=1e-6)


@pytest.mark.e2e
def test_readme_quick_check_command():
    """The issue's acceptance one-liner, in a fresh interpreter (no env var needed for Keras 3)."""
    code = ("import tensorflow as tf, albert_tf; m = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_preset('base_v2'));"
            " assert isinstance(m, tf.keras.Model); print(m.count_params())")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_USE_LEGACY_KERAS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "11683584"
