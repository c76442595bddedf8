"""`AlbertModel(recompute=True)`: each layer's activations recomputed in the backward pass, same gradients."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer
from albert_tf import AlbertClassifier, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.pretraining.model import pretraining_loss
from albert_tf.training.optimization import create_optimizer
from fresh_process import run_measurement

TINY = dict(vocab_size=53, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=1,
            num_attention_heads=4, intermediate_size=24, inner_group_num=1, hidden_act="gelu",
            max_position_embeddings=16, type_vocab_size=2, initializer_range=0.02,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
GROUPED = dict(TINY, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2)
DROPOUT = dict(GROUPED, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def batch(config, seed=0, size=3, seq=11):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config["vocab_size"], size=(size, seq)).astype(np.int32)
    mask = np.ones((size, seq), np.int32)
    mask[1:2, 7:] = 0
    mask[2:3, 4:] = 0
    seg = np.zeros((size, seq), np.int32)
    seg[:, 5:] = 1
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)}


def twin_models(config, **kwargs):
    """`(plain, recomputing)` encoders with the same weights."""
    plain = AlbertModel(AlbertConfig.from_dict(config), **kwargs)
    recomputing = AlbertModel(AlbertConfig.from_dict(config), recompute=True, **kwargs)
    recomputing.set_weights(plain.get_weights())
    return plain, recomputing


def loss_and_grads(model, inputs, dropout_seed=None):
    """A loss touching every output (each layer's output, the sequence and the pooled output), its gradients."""
    with tf.GradientTape() as tape:
        out = model(inputs, training=True, dropout_seed=dropout_seed)
        weights = tf.cast(tf.range(1, out["sequence_output"].shape[-1] + 1), out["sequence_output"].dtype)
        loss = tf.reduce_sum(tf.cast(out["sequence_output"] ** 2 * weights, tf.float32))
        loss += tf.reduce_sum(tf.cast(out["pooled_output"], tf.float32))
        loss += 0.5 * tf.reduce_sum(tf.cast(out["encoder_outputs"][1], tf.float32) ** 3)
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, grads


def assert_same_grads(got, want, rtol=1e-6):
    """Equal to `rtol` relative; entries that are zero but for rounding (e.g. the key bias's gradient, which the
    softmax cancels) to `rtol` times the largest gradient entry."""
    assert len(got) == len(want)
    assert [g is None for g in got] == [w is None for w in want]
    got = [tf.convert_to_tensor(g).numpy() for g in got if g is not None]
    want = [tf.convert_to_tensor(w).numpy() for w in want if w is not None]
    scale = max(float(np.abs(w).max()) for w in want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("config", [TINY, GROUPED], ids=["G1_K1", "G2_K2"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf_function"])
def test_gradients_equal(config, graph):
    """Against TensorFlow's own autodiff of the layer loop (an eager call of the plain model): the plain model in
    a `tf.function` (its layer-by-layer backward, `layer_stack`) and the recomputing model, eager or not."""
    plain, recomputing = twin_models(config)
    inputs = batch(config)
    want_loss, want = loss_and_grads(plain, inputs)
    fn = tf.function(loss_and_grads) if graph else loss_and_grads
    for model in (plain, recomputing) if graph else (recomputing,):
        got_loss, got = fn(model, inputs)
        np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-6)
        assert_same_grads(got, want)
        # The shared blocks' gradients sum over their applications: not zero, and different per group.
        assert all(float(tf.reduce_max(tf.abs(tf.convert_to_tensor(g)))) > 0 for g in got[:-2])


def measure_shared_gradient_peak(recompute):
    """The allocator peak of a training step's gradient computation over one application's weight gradients
    (run by `fresh_process.run_measurement`, in a process whose allocator keeps statistics)."""
    config = dict(TINY, hidden_size=128, num_hidden_layers=12, intermediate_size=8192)
    model = AlbertModel(AlbertConfig.from_dict(config), recompute=recompute)
    inputs = batch(config, size=1, seq=4)
    per_application = sum(int(tf.size(v)) * 4 for v in model.groups[0][0].trainable_variables)

    @tf.function
    def sums(inputs):
        _, grads = loss_and_grads(model, inputs)
        return [tf.reduce_sum(tf.convert_to_tensor(g)) for g in grads]

    sums(inputs)                                         # traced and optimised outside the measured call
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    sums(inputs)
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"] - before
    return peak / per_application


@pytest.mark.e2e
@pytest.mark.parametrize("recompute", [False, True], ids=["keep", "recompute"])
def test_shared_gradients_summed_as_the_backward_pass_goes(recompute):
    """With a wide FFN and a 4-token batch, the shared block's weight gradients are nearly all of a training
    step's memory. TensorFlow's autodiff of the 12-layer loop holds about 11 per-application gradients at once
    before summing them; the layer-by-layer backward holds the running sum and one layer's gradients."""
    ratio = run_measurement("models.test_recompute", "measure_shared_gradient_peak", recompute)
    assert ratio < 3.0, ratio


def test_recompute_keeps_only_layer_inputs():
    """With recompute, the training step's graph runs each layer's forward twice (the second time in the
    backward pass): twice the forward attention batch-matmuls of a plain step, the same backward ones."""
    plain, recomputing = twin_models(GROUPED)
    inputs = batch(GROUPED)

    def count(model):
        graph = tf.function(loss_and_grads).get_concrete_function(model, inputs).graph.as_graph_def()
        nodes = list(graph.node) + [n for fn in graph.library.function for n in fn.node_def]
        return sum(node.op.startswith("BatchMatMul") for node in nodes)

    applications = GROUPED["num_hidden_layers"] * GROUPED["inner_group_num"]
    assert count(plain) == 6 * applications
    assert count(recomputing) == 8 * applications


def test_dropout_masks_are_the_same_in_the_recomputed_forward():
    plain, recomputing = twin_models(DROPOUT)
    inputs = batch(DROPOUT)
    seed = tf.constant([3, 17], tf.int32)
    want_loss, want = loss_and_grads(plain, inputs, seed)
    got_loss, got = loss_and_grads(recomputing, inputs, seed)
    np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-6)
    assert_same_grads(got, want)
    # The masks matter: another seed gives other gradients (so the equality above is not vacuous).
    _, other = loss_and_grads(plain, inputs, tf.constant([4, 17], tf.int32))
    assert not np.allclose(tf.convert_to_tensor(other[-3]).numpy(), tf.convert_to_tensor(want[-3]).numpy())
    # Dropout is active: the training loss differs from the inference one.
    no_dropout = tf.reduce_sum(plain(inputs, training=False)["pooled_output"])
    assert not np.isclose(no_dropout.numpy(), tf.reduce_sum(plain(inputs, training=True,
                                                                  dropout_seed=seed)["pooled_output"]).numpy())


def test_recompute_draws_its_seed_once_per_call():
    """Without a seed, a training call draws one from the blocks' dropout seed generator (outside the recomputed
    function); the gradients are those of a plain model run with that seed."""
    plain, recomputing = twin_models(DROPOUT)
    inputs = batch(DROPOUT)
    generator = recomputing.dropout_seed_generator()
    state = generator.state.numpy()
    got_loss, got = tf.function(loss_and_grads)(recomputing, inputs)
    assert not np.array_equal(generator.state.numpy(), state)         # one draw per call, outside the recompute
    generator.state.assign(state)
    seed = keras.random.randint([2], 0, 2**31 - 1, dtype="int32", seed=generator)
    want_loss, want = loss_and_grads(plain, inputs, seed)
    np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-6)
    assert_same_grads(got, want)


def test_inference_unchanged_and_config_round_trip(tmp_path):
    plain, recomputing = twin_models(DROPOUT)
    inputs = batch(DROPOUT)
    np.testing.assert_array_equal(recomputing(inputs)["sequence_output"].numpy(),
                                  plain(inputs)["sequence_output"].numpy())
    assert recomputing.get_config()["recompute"] is True and plain.get_config()["recompute"] is False
    assert AlbertModel.from_config(recomputing.get_config()).recompute is True
    assert [v.path for v in recomputing.weights] == [v.path for v in plain.weights]
    path = str(tmp_path / "recompute.keras")
    recomputing.save(path)
    assert keras.saving.load_model(path).recompute is True
    with pytest.raises(TypeError, match="`recompute` must be a bool"):
        AlbertModel(AlbertConfig.from_dict(TINY), recompute="yes")


@pytest.mark.parametrize("cls,kwargs", [(AlbertPretrainer, {}), (AlbertClassifier, {"num_labels": 3}),
                                        (AlbertSquadV1, {}), (AlbertSquadV2, {}), (AlbertRace, {})])
def test_task_models_pass_recompute_on(cls, kwargs):
    model = cls(AlbertConfig.from_dict(TINY), recompute=True, **kwargs)
    assert model.encoder.recompute is True and model.recompute is True
    clone = cls.from_config(model.get_config())
    assert clone.encoder.recompute is True
    assert cls(AlbertConfig.from_dict(TINY), **kwargs).encoder.recompute is False


@pytest.mark.e2e  # two XLA compilations of a 10-application training step: tens of seconds on 2 cores
def test_jit_compile_smoke():
    plain, recomputing = twin_models(GROUPED)
    inputs = batch(GROUPED)
    want_loss, want = loss_and_grads(plain, inputs)
    for model in (plain, recomputing):
        got_loss, got = tf.function(loss_and_grads, jit_compile=True)(model, inputs)
        np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-5)
        assert_same_grads(got, want, rtol=1e-4)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_smoke(policy):
    plain, recomputing = twin_models(DROPOUT, dtype=policy)
    inputs = batch(DROPOUT)
    seed = tf.constant([5, 6], tf.int32)
    want_loss, want = tf.function(loss_and_grads)(plain, inputs, seed)
    got_loss, got = tf.function(loss_and_grads)(recomputing, inputs, seed)
    assert all(v.dtype == "float32" for v in recomputing.trainable_variables)
    assert np.isfinite(got_loss.numpy())
    assert all(tf.convert_to_tensor(g).dtype == tf.float32 for g in got)
    # Both runs compute the same operations on the same values in the same low precision (the recomputed
    # forward repeats the first one): measured bit-for-bit equal in both policies, oneDNN off and on. The
    # bound is the float32 tests' 1e-6; a forward that differed (another order of sums, a cast in another
    # place) would differ by a bfloat16/float16 rounding, 1e-3 or more.
    np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-6)
    assert_same_grads(got, want, rtol=1e-6)


def pretraining_features(config, seed, size=4, seq=12, predictions=3):
    rng = np.random.default_rng(seed)
    features = dict(batch(config, seed, size, seq))
    features["input_mask"] = tf.ones([size, seq], tf.int32)
    features["masked_lm_positions"] = tf.constant(rng.integers(1, seq, size=(size, predictions)), tf.int32)
    features["masked_lm_ids"] = tf.constant(rng.integers(0, config["vocab_size"], size=(size, predictions)),
                                            tf.int32)
    features["masked_lm_weights"] = tf.ones([size, predictions], tf.float32)
    features["next_sentence_labels"] = tf.constant(rng.integers(0, 2, size=(size,)), tf.int32)
    return features


def pretrain(recompute, steps=3):
    """A few pretraining steps (the library's LAMB; a small loop of this test's own) -> the losses."""
    keras.utils.set_random_seed(1)
    model = AlbertPretrainer(AlbertConfig.from_dict(DROPOUT), recompute=recompute)
    keras.utils.set_random_seed(2)        # the same dropout seeds in both runs (drawn once per call)
    optimizer = create_optimizer(1e-2, 10, 2, optimizer="lamb")

    @tf.function
    def step(features):
        with tf.GradientTape() as tape:
            total, _, _ = pretraining_loss(model(features, training=True), features)
        optimizer.apply_gradients(zip(tape.gradient(total, model.trainable_variables), model.trainable_variables))
        return total

    features = pretraining_features(DROPOUT, seed=0)
    return [float(step(features)) for _ in range(steps)]


def test_pretraining_losses_equal():
    plain, recomputing = pretrain(False), pretrain(True)
    np.testing.assert_allclose(recomputing, plain, rtol=1e-5)
    assert plain[-1] < plain[0]


MIRRORED = textwrap.dedent('''
    import json, os, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import numpy as np
    sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]   # the module, the shared helpers
    from test_recompute import DROPOUT, batch, loss_and_grads, twin_models

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        plain, recomputing = twin_models(DROPOUT)
    inputs = batch(DROPOUT, size=4)
    dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors(inputs).unbatch().batch(4))
    replica_inputs = next(iter(dataset))

    @tf.function
    def step(model, replica_inputs):
        def replica_fn(x):
            seed = tf.stack([tf.distribute.get_replica_context().replica_id_in_sync_group, 9])
            loss, grads = loss_and_grads(model, x, seed)
            return [loss] + [tf.convert_to_tensor(g) for g in grads]
        per_replica = strategy.run(replica_fn, args=(replica_inputs,))
        return [strategy.reduce("SUM", v, axis=None) for v in per_replica]

    # Reference: TensorFlow's autodiff (eager calls), per replica's half of the batch with its seed, summed.
    halves = [{k: v[2 * r:2 * r + 2] for k, v in inputs.items()} for r in range(2)]
    eager = [loss_and_grads(plain, half, tf.constant([r, 9])) for r, half in enumerate(halves)]
    want = [eager[0][0] + eager[1][0]] + [tf.convert_to_tensor(a) + tf.convert_to_tensor(b)
                                          for a, b in zip(eager[0][1], eager[1][1])]
    for got in (step(plain, replica_inputs), step(recomputing, replica_inputs)):
        # As `assert_same_grads`: relative to each entry, or to the largest gradient entry for rounding ones.
        scale = max(float(np.abs(w.numpy()).max()) for w in want[1:])
        worst = max(float(np.max(np.abs(g.numpy() - w.numpy()) / (np.abs(w.numpy()) + scale)))
                    for g, w in zip(got, want))
        print(json.dumps({"worst": worst, "replicas": strategy.num_replicas_in_sync}))
''')


@pytest.mark.e2e
def test_mirrored_two_replicas(tmp_path):
    script = tmp_path / "mirrored.py"
    script.write_text(MIRRORED)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, str(script), os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    results = [json.loads(line) for line in out.stdout.strip().splitlines()[-2:]]
    for result in results:               # the plain model's graph step, then the recomputing one's
        assert result["replicas"] == 2
        assert result["worst"] <= 1e-6, result
