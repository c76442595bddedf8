"""SQuAD v1 / v2 heads against a NumPy transcription of `squad_utils.create_v1_model` / `create_v2_model`."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks.squad.model import (AlbertSquadV1, AlbertSquadV2, default_p_mask, squad_v1_loss,
                                    squad_v2_loss)
from harness import TINY_CONFIG

B, T = 3, 12


def tiny_config():
    return TINY_CONFIG.copy()


def make_inputs(rng):
    input_ids = rng.integers(5, 60, size=(B, T)).astype(np.int32)
    lengths = [12, 9, 7]
    query = [3, 2, 2]
    input_mask = np.zeros((B, T), np.int32)
    segment_ids = np.zeros((B, T), np.int32)
    p_mask = np.ones((B, T), np.int32)
    for b in range(B):
        input_mask[b, :lengths[b]] = 1
        segment_ids[b, query[b] + 2:lengths[b]] = 1
        p_mask[b, 0] = 0
        p_mask[b, query[b] + 2:lengths[b] - 1] = 0
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids, "p_mask": p_mask}


def np_dense(x, layer, activation=None):
    y = x @ layer.kernel.numpy()
    if layer.use_bias:
        y = y + layer.bias.numpy()
    return np.tanh(y) if activation == "tanh" else y


def np_layer_norm(x, layer, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * layer.gamma.numpy() + layer.beta.numpy()


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def np_v2_head(model, seq_bth, p_mask, start_positions=None, start_n_top=5, end_n_top=5):
    """`create_v2_model` line by line: `output` is transposed to [T, B, H]; gathers are one-hot einsums."""
    output = np.transpose(seq_bth, [1, 0, 2]).astype(np.float64)
    p_mask = p_mask.astype(np.float64)
    start_logits = np.squeeze(np_dense(output, model.start_dense), -1).T                     # [B, T]
    start_logits_masked = start_logits * (1 - p_mask) - 1e30 * p_mask
    start_log_probs = np_log_softmax(start_logits_masked)

    def end_head(x):
        x = np_dense(x, model.end_dense_0, "tanh")
        x = np_layer_norm(x, model.end_layer_norm)
        return np_dense(x, model.end_dense_1)

    out = {}
    if start_positions is not None:
        start_index = np.eye(T)[start_positions]                                               # [B, T]
        start_features = np.einsum("lbh,bl->bh", output, start_index)
        start_features = np.tile(start_features[None], [T, 1, 1])
        end_logits = end_head(np.concatenate([output, start_features], -1))
        end_logits = np.squeeze(end_logits, -1).T
        end_logits_masked = end_logits * (1 - p_mask) - 1e30 * p_mask
        out["start_log_probs"] = start_log_probs
        out["end_log_probs"] = np_log_softmax(end_logits_masked)
    else:
        start_top_index = np.argsort(-start_log_probs, axis=-1, kind="stable")[:, :start_n_top]
        start_top_log_probs = np.take_along_axis(start_log_probs, start_top_index, -1)
        start_index = np.eye(T)[start_top_index]                                               # [B, k, T]
        start_features = np.einsum("lbh,bkl->bkh", output, start_index)
        end_input = np.tile(output[:, :, None], [1, 1, start_n_top, 1])
        start_features = np.tile(start_features[None], [T, 1, 1, 1])
        end_logits = end_head(np.concatenate([end_input, start_features], -1))
        end_logits = np.reshape(end_logits, [T, -1, start_n_top])
        end_logits = np.transpose(end_logits, [1, 2, 0])                                        # [B, k, T]
        end_logits_masked = end_logits * (1 - p_mask[:, None]) - 1e30 * p_mask[:, None]
        end_log_probs = np_log_softmax(end_logits_masked)
        end_top_index = np.argsort(-end_log_probs, axis=-1, kind="stable")[:, :, :end_n_top]
        end_top_log_probs = np.take_along_axis(end_log_probs, end_top_index, -1)
        out.update(start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
                   end_top_log_probs=end_top_log_probs.reshape(-1, start_n_top * end_n_top),
                   end_top_index=end_top_index.reshape(-1, start_n_top * end_n_top))
    cls_index = np.eye(T)[np.zeros(B, int)]
    cls_feature = np.einsum("lbh,bl->bh", output, cls_index)
    start_p = np.exp(np_log_softmax(start_logits_masked))
    start_feature = np.einsum("lbh,bl->bh", output, start_p)
    ans = np_dense(np.concatenate([start_feature, cls_feature], -1), model.answer_class_dense_0, "tanh")
    out["cls_logits"] = np.squeeze(np_dense(ans, model.answer_class_dense_1), -1)
    return out


@pytest.fixture(scope="module")
def v2_model():
    tf.random.set_seed(1)
    model = AlbertSquadV2(tiny_config(), start_n_top=3, end_n_top=2, dropout_prob=0.1)
    # Non-trivial biases and LayerNorm parameters so that every term is checked.
    rng = np.random.default_rng(0)
    for w in [model.start_dense.bias, model.end_dense_0.bias, model.end_dense_1.bias,
              model.answer_class_dense_0.bias, model.end_layer_norm.beta, model.end_layer_norm.gamma]:
        w.assign(rng.normal(0, 0.5, w.shape).astype(np.float32) + (1.0 if "gamma" in w.path else 0.0))
    for layer in [model.start_dense, model.end_dense_0, model.end_dense_1, model.answer_class_dense_0,
                  model.answer_class_dense_1]:
        layer.kernel.assign(rng.normal(0, 0.5, layer.kernel.shape).astype(np.float32))
    return model


def test_v2_inference_matches_numpy_transcription(v2_model):
    inputs = make_inputs(np.random.default_rng(1))
    out = v2_model(inputs, training=False)
    ref = np_v2_head(v2_model, out["sequence_output"].numpy(), inputs["p_mask"], start_n_top=3, end_n_top=2)
    for name in ("start_top_index", "end_top_index"):
        np.testing.assert_array_equal(out[name].numpy(), ref[name], err_msg=name)
    for name in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        np.testing.assert_allclose(out[name].numpy(), ref[name], rtol=1e-4, atol=1e-4, err_msg=name)
    assert out["start_top_index"].shape == (B, 3) and out["end_top_index"].shape == (B, 6)
    # Starts never land on masked positions (query, [SEP], padding); [CLS] is allowed.
    starts = out["start_top_index"].numpy()
    assert (np.take_along_axis(inputs["p_mask"], starts, 1) == 0).all()


def test_v2_training_path_and_loss_match_numpy(v2_model):
    inputs = make_inputs(np.random.default_rng(2))
    starts = np.array([4, 0, 5], np.int32)
    ends = np.array([6, 0, 5], np.int32)
    is_impossible = np.array([0, 1, 0], np.int32)
    features = dict(inputs, start_positions=starts, end_positions=ends, is_impossible=is_impossible)
    out = v2_model(features, training=False)
    ref = np_v2_head(v2_model, out["sequence_output"].numpy(), inputs["p_mask"], start_positions=starts)
    valid = inputs["p_mask"] == 0
    for name in ("start_log_probs", "end_log_probs"):
        np.testing.assert_allclose(out[name].numpy()[valid], ref[name][valid], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["cls_logits"].numpy(), ref["cls_logits"], rtol=1e-4, atol=1e-4)
    total, parts = squad_v2_loss(out, features)
    ce = lambda lp, pos: -np.mean(lp[np.arange(B), pos])
    x = ref["cls_logits"]
    sig_ce = np.mean(np.maximum(x, 0) - x * is_impossible + np.log1p(np.exp(-np.abs(x))))
    expected = 0.5 * (ce(ref["start_log_probs"], starts) + ce(ref["end_log_probs"], ends)) + 0.5 * sig_ce
    np.testing.assert_allclose(total.numpy(), expected, rtol=1e-4)
    np.testing.assert_allclose(parts["cls_loss"].numpy(), sig_ce, rtol=1e-4)


def test_v2_p_mask_default(v2_model):
    # Dropout in training only, and the config round trip: tests/models/test_heads.py (the harness).
    inputs = make_inputs(np.random.default_rng(3))
    a = v2_model(inputs, training=False)["cls_logits"].numpy()
    no_p_mask = {k: v for k, v in inputs.items() if k != "p_mask"}
    np.testing.assert_array_equal(default_p_mask(inputs["input_mask"], inputs["segment_ids"]).numpy(),
                                  inputs["p_mask"])
    c = v2_model(no_p_mask, training=False)["cls_logits"].numpy()
    np.testing.assert_allclose(a, c, rtol=1e-6)


def test_v2_attributes_and_errors(v2_model):
    h = 16
    assert v2_model.start_dense.kernel.shape == (h, 1)
    assert v2_model.end_dense_0.kernel.shape == (2 * h, h)
    assert v2_model.end_layer_norm.epsilon == 1e-12
    assert v2_model.answer_class_dense_0.kernel.shape == (2 * h, h)
    assert not v2_model.answer_class_dense_1.use_bias
    shared = AlbertSquadV2(encoder=v2_model.encoder)
    assert shared.encoder is v2_model.encoder
    with pytest.raises(ValueError, match="start_n_top"):
        AlbertSquadV2(tiny_config(), start_n_top=0)
    with pytest.raises(ValueError, match="config"):
        AlbertSquadV2()


def test_v1_logits_and_loss_match_numpy():
    model = AlbertSquadV1(tiny_config())
    inputs = make_inputs(np.random.default_rng(5))
    out = model(inputs)
    w = model.squad_head.output_weights.numpy()
    assert w.shape == (2, 16)
    model.squad_head.output_bias.assign([0.3, -0.2])
    out = model(inputs)
    seq = out["sequence_output"].numpy()
    logits = seq.reshape(-1, 16) @ w.T + np.array([0.3, -0.2])
    logits = logits.reshape(B, T, 2).transpose(2, 0, 1)
    np.testing.assert_allclose(out["start_logits"].numpy(), logits[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["end_logits"].numpy(), logits[1], rtol=1e-5, atol=1e-6)
    starts, ends = np.array([1, 2, 3]), np.array([4, 5, 6])
    loss = squad_v1_loss(out, {"start_positions": starts, "end_positions": ends})
    ls = lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))
    expected = (-np.mean(ls(logits[0])[np.arange(B), starts]) - np.mean(ls(logits[1])[np.arange(B), ends])) / 2
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5)


def test_heads_are_written_under_the_tf1_checkpoint_names(v2_model, tmp_path):
    """The heads are written under the original TF1 names of `run_squad_v1.py` / `run_squad_v2.py` (read back into
    the same outputs: `tests/models/test_heads.py::test_convert`)."""
    from albert_tf.checkpoints import save_tf1_checkpoint

    prefix = save_tf1_checkpoint(v2_model, str(tmp_path / "v2" / "model.ckpt"))
    shapes = dict(tf.train.list_variables(prefix))
    assert shapes["start_logits/dense/kernel"] == [16, 1] and shapes["start_logits/dense/bias"] == [1]
    assert shapes["end_logits/dense_0/kernel"] == [32, 16] and shapes["end_logits/LayerNorm/gamma"] == [16]
    assert shapes["end_logits/dense_1/kernel"] == [16, 1]
    assert shapes["answer_class/dense_0/kernel"] == [32, 16] and shapes["answer_class/dense_1/kernel"] == [16, 1]
    assert "answer_class/dense_1/bias" not in shapes
    prefix = save_tf1_checkpoint(AlbertSquadV1(tiny_config()), str(tmp_path / "v1" / "model.ckpt"))
    shapes = dict(tf.train.list_variables(prefix))
    assert shapes["cls/squad/output_weights"] == [2, 16] and shapes["cls/squad/output_bias"] == [2]


def test_v2_under_mixed_bfloat16_is_finite():
    model = AlbertSquadV2(tiny_config(), start_n_top=2, end_n_top=2, dtype="mixed_bfloat16")
    inputs = make_inputs(np.random.default_rng(7))
    out = model(inputs, training=False)
    for name in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        assert out[name].dtype == tf.float32 and np.isfinite(out[name].numpy()).all()
    starts = out["start_top_index"].numpy()
    assert (np.take_along_axis(inputs["p_mask"], starts, 1) == 0).all()
    features = dict(inputs, start_positions=np.array([4, 0, 5]), end_positions=np.array([6, 0, 5]),
                    is_impossible=np.array([0, 1, 0]))
    loss, _ = squad_v2_loss(model(features, training=True), features)
    assert np.isfinite(loss.numpy())
