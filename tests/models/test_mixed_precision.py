"""mixed_bfloat16 against float32 on a tiny ALBERT: outputs, dtypes, finite losses, a tracking loss curve."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer
from albert_tf.models.albert_model import compile_forward
from albert_tf.tasks.pretraining.model import pretraining_loss

TINY = dict(vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=3, num_hidden_groups=1,
            num_attention_heads=4, intermediate_size=48, inner_group_num=1, hidden_act="gelu",
            max_position_embeddings=32, type_vocab_size=2, initializer_range=0.02,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
BATCH, SEQ, PREDS = 4, 24, 5


def make_features(seed=0):
    """A pretraining batch with padding, two segments and some zero-weight prediction slots."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, TINY["vocab_size"], size=(BATCH, SEQ)).astype(np.int32)
    mask = np.ones((BATCH, SEQ), np.int32)
    mask[1, 17:] = 0
    mask[3, 9:] = 0
    ids[mask == 0] = 0
    seg = np.zeros((BATCH, SEQ), np.int32)
    seg[:, 6:] = 1
    positions = np.sort(rng.choice(np.arange(1, 9), size=(BATCH, PREDS)), axis=1).astype(np.int32)
    weights = np.ones((BATCH, PREDS), np.float32)
    weights[1, 3:] = 0.0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions,
            "masked_lm_ids": rng.integers(5, TINY["vocab_size"], size=(BATCH, PREDS)).astype(np.int32),
            "masked_lm_weights": weights,
            "next_sentence_labels": rng.integers(0, 2, size=(BATCH, 1)).astype(np.int32)}


def wider_init(model, seed=0):
    """Weights of realistic scale (stddev 0.2 instead of 0.02), so bfloat16 rounding is actually exercised."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        if "gamma" in v.path:
            v.assign(1.0 + 0.1 * rng.normal(size=v.shape))
        else:
            v.assign(0.2 * rng.normal(size=v.shape))


def relative_error(got, want):
    """Max absolute difference over the output scale (max |want|)."""
    got, want = np.asarray(tf.cast(got, tf.float32)), np.asarray(want)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-6))


@pytest.fixture(scope="module")
def pair():
    """A float32 pretrainer and a mixed_bfloat16 one holding the same weights."""
    config = AlbertConfig.from_dict(TINY)
    fp32 = AlbertPretrainer(config)
    wider_init(fp32)
    bf16 = AlbertPretrainer(config, dtype="mixed_bfloat16")
    bf16.set_weights(fp32.get_weights())
    return fp32, bf16


def test_variables_float32_compute_bfloat16(pair):
    _, bf16 = pair
    assert bf16.encoder.compute_dtype == "bfloat16"
    assert {v.dtype for v in bf16.weights} == {"float32"}
    out = bf16(make_features(), training=False)
    assert out["sequence_output"].dtype == tf.bfloat16
    assert out["pooled_output"].dtype == tf.bfloat16
    # Logits stay float32 (as the original's heads), as does the embedding LayerNorm output.
    assert out["mlm_logits"].dtype == tf.float32
    assert out["sop_logits"].dtype == tf.float32


# bfloat16 keeps 8 significant bits: one rounding to nearest changes a value by at most U = 2^-8 (3.9e-3) of
# itself. A bfloat16 layer rounds its input, each matmul's output, the softmax and the LayerNorm output; the
# LayerNorms keep the deviation from growing with depth (it is largest after the first layer). The bounds
# are in units of U, at about twice the largest deviation read: on an AMD EPYC (Eigen's bfloat16 kernels,
# with oneDNN off or on) encoder outputs and logits 3.1 U, the pooled output 5.7 U, the RMS deviation 1.7 U;
# on Intel CPUs (oneDNN's kernels) less (under 2.6 U and 5.1 U). A bug (a float32 LayerNorm skipped, a
# wrong cast) moves them by far more.
U = 2.0 ** -8
MAX_DEVIATION = 6 * U          # every encoder output, the sequence output and the logits
POOLED_DEVIATION = 12 * U      # one more bfloat16 `tanh(W x[CLS])`, its input and output rounded
RMS_DEVIATION = 3 * U          # typical, not worst-case, deviation of the sequence output


def test_outputs_within_bfloat16_rounding_of_float32(pair):
    fp32, bf16 = pair
    features = make_features()
    want = fp32(features, training=False)
    got = bf16(features, training=False)
    for key in ("sequence_output", "mlm_logits", "sop_logits"):
        err = relative_error(got[key], want[key])
        assert err < MAX_DEVIATION, (key, err / U)
    err = relative_error(got["pooled_output"], want["pooled_output"])
    assert err < POOLED_DEVIATION, err / U
    for layer, (got_layer, want_layer) in enumerate(zip(got["encoder_outputs"], want["encoder_outputs"])):
        err = relative_error(got_layer, want_layer)
        assert err < MAX_DEVIATION, (layer, err / U)
    seq_want = want["sequence_output"].numpy()
    seq_got = tf.cast(got["sequence_output"], tf.float32).numpy()
    rms = np.sqrt(np.mean((seq_got - seq_want) ** 2)) / np.sqrt(np.mean(seq_want ** 2))
    assert rms < RMS_DEVIATION, rms / U
    # Far from float32 identity, so the bfloat16 path really ran.
    assert np.max(np.abs(seq_got - seq_want)) > 1e-5


def test_compiled_forward_matches_eager(pair):
    fp32, bf16 = pair
    features = make_features(1)
    want = fp32(features, training=False)
    for jit in (False, True):
        got = compile_forward(fp32, jit_compile=jit)(features)
        np.testing.assert_allclose(got["sequence_output"].numpy(), want["sequence_output"].numpy(),
                                   atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(got["mlm_logits"].numpy(), want["mlm_logits"].numpy(), atol=1e-4, rtol=1e-5)
    got16 = compile_forward(bf16, jit_compile=False)(features)
    assert relative_error(got16["sequence_output"], want["sequence_output"]) < 4e-2


def weight_casts(model, features, training):
    """The `Cast` nodes of a traced forward (or training step) whose input is a variable read."""
    variables = model.trainable_variables

    @tf.function
    def step(features):
        if not training:
            return model(features, training=False)["sequence_output"]
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(model(features, training=True)["sequence_output"], tf.float32))
        return tape.gradient(loss, variables)

    graph = step.get_concrete_function(features).graph.as_graph_def()
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    ops = {n.name: n.op for n in nodes}
    return [n.name for n in nodes
            if n.op == "Cast" and n.input and ops.get(n.input[0].split(":")[0].lstrip("^")) == "ReadVariableOp"]


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_shared_weights_cast_once_per_forward(training):
    """A shared block's kernels are cast to bfloat16 once per forward, however many layers apply it (the block's
    `prepare_weights`), not once per layer: 12 layers make as many weight casts as 2."""
    features = {k: tf.constant(v) for k, v in make_features().items()
                if k in ("input_ids", "input_mask", "segment_ids")}
    counts = {}
    for layers in (2, 12):
        model = AlbertModel(AlbertConfig.from_dict(dict(TINY, num_hidden_layers=layers)), dtype="mixed_bfloat16")
        counts[layers] = len(weight_casts(model, features, training))
    assert counts[2] >= 12, counts     # the block's 6 kernels and 6 biases, at least
    assert counts[12] == counts[2], counts


def test_global_policy_path():
    """`keras.mixed_precision.set_dtype_policy("mixed_bfloat16")` reaches every layer, heads included."""
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        model = AlbertModel(AlbertConfig.from_dict(TINY))
    finally:
        keras.mixed_precision.set_dtype_policy(previous)
    out = model(make_features(), training=False)
    assert out["sequence_output"].dtype == tf.bfloat16
    assert model.groups[0][0].attention.query.compute_dtype == "bfloat16"
    assert model.groups[0][0].attention_layer_norm.compute_dtype == "float32"
    assert np.all(np.isfinite(tf.cast(out["sequence_output"], tf.float32).numpy()))


def train_curve(model, steps, dropout_seed=None):
    """Adam steps on one fixed batch (compiled once); returns the float32 total losses."""
    optimizer = keras.optimizers.Adam(3e-3)
    variables = model.trainable_variables
    optimizer.build(variables)
    features = {k: tf.constant(v) for k, v in make_features(2).items()}

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            total, _, _ = pretraining_loss(model(features, training=True), features)
        grads = tape.gradient(total, variables)
        # Gradients of the float32 master weights are float32 (no loss scaling needed for bfloat16).
        assert {g.dtype for g in grads} == {tf.float32}
        optimizer.apply_gradients(zip(grads, variables))
        return total

    return np.array([float(step()) for _ in range(steps)])


def test_pretraining_loss_tracks_float32():
    config = AlbertConfig.from_dict(TINY)
    fp32 = AlbertPretrainer(config)
    wider_init(fp32, seed=3)
    bf16 = AlbertPretrainer(config, dtype="mixed_bfloat16")
    bf16.set_weights(fp32.get_weights())
    want = train_curve(fp32, 6)
    got = train_curve(bf16, 6)
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(want))
    assert got[-1] < got[0] and want[-1] < want[0]          # Both learn the batch.
    np.testing.assert_allclose(got, want, rtol=5e-2)        # ... along the same curve.
    # The two models stay close in weights, too: same updates up to bfloat16 rounding.
    for a, b in zip(fp32.trainable_variables[:4], bf16.trainable_variables[:4]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-2)


def test_mixed_dropout_training_finite():
    """v1-style dropout under mixed_bfloat16: the dropout layers run in bfloat16 and the loss is finite."""
    config = AlbertConfig.from_dict(dict(TINY, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    model = AlbertPretrainer(config, dtype="mixed_bfloat16")
    features = make_features(4)
    with tf.GradientTape() as tape:
        outputs = model(features, training=True)
        total, mlm, sop = pretraining_loss(outputs, features)
    grads = tape.gradient(total, model.trainable_variables)
    assert np.isfinite(float(total)) and np.isfinite(float(mlm)) and np.isfinite(float(sop))
    assert all(g is not None for g in grads)
    assert all(np.all(np.isfinite(tf.convert_to_tensor(g).numpy())) for g in grads)
    eval_a = model(features, training=False)["sequence_output"]
    eval_b = model(features, training=False)["sequence_output"]
    np.testing.assert_array_equal(eval_a.numpy(), eval_b.numpy())
