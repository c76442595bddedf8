"""The ALBERT AdamW / LAMB and learning-rate schedule against a NumPy transcription of the original
`optimization.py` and `lamb_optimizer.py` (`tests/optimizer_reference.py`)."""

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.training import optimization
from fresh_process import run_measurement
from optimizer_reference import np_learning_rate, np_step


def test_schedule_matches_spec_example():
    # The original `create_optimizer`: warm-up 4, peak 0.01 -> steps 1..6 use lr(0..5) = 0, .0025, .005, .0075, decayed.
    schedule = optimization.AlbertLearningRateSchedule(0.01, 100, 4)
    got = [float(schedule(s)) for s in range(6)]
    np.testing.assert_allclose(got[:4], [0.0, 0.0025, 0.005, 0.0075], rtol=1e-6)
    np.testing.assert_allclose(got[4:], [0.01 * 0.96, 0.01 * 0.95], rtol=1e-6)


@pytest.mark.parametrize("kwargs", [
    dict(init_lr=1e-3, num_train_steps=10, num_warmup_steps=3),
    dict(init_lr=2e-3, num_train_steps=12, num_warmup_steps=4, poly_power=2.0, start_warmup_step=2),
    dict(init_lr=1e-3, num_train_steps=5, num_warmup_steps=0, poly_power=0.5),
])
def test_schedule_against_numpy(kwargs):
    schedule = optimization.AlbertLearningRateSchedule(**kwargs)
    for step in range(kwargs["num_train_steps"] + 3):
        np.testing.assert_allclose(float(schedule(step)), np_learning_rate(step, **kwargs), rtol=1e-5, atol=1e-9,
                                   err_msg=f"step {step}")


def test_exclusions_on_real_variable_paths():
    config = albert_tf.AlbertConfig.from_dict(dict(
        vocab_size=30, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16))
    model = albert_tf.AlbertPretrainer(config)
    opt = optimization.create_optimizer(1e-3, 10, 2, optimizer="lamb")
    opt.build(model.trainable_variables)
    decayed = {optimization.variable_path(v): flag for v, flag in zip(model.trainable_variables, opt.weight_decay_flags())}
    adapted = {optimization.variable_path(v): flag for v, flag in zip(model.trainable_variables, opt.layer_adaptation_flags())}
    assert decayed == adapted
    excluded = sorted(name for name, flag in decayed.items() if not flag)
    included = sorted(name for name, flag in decayed.items() if flag)
    for name in excluded:
        assert name.endswith(("gamma", "beta", "bias")), name
    for name in included:
        assert name.endswith(("kernel", "embeddings", "output_weights")), name
    assert any("LayerNorm/gamma" in n for n in excluded) and any("LayerNorm_1/beta" in n for n in excluded)
    assert "predictions/output_bias" in excluded and "seq_relationship/output_bias" in excluded
    assert "seq_relationship/output_weights" in included and "embeddings/word_embeddings" in included
    # Every weight is classified: all LayerNorm weights and biases are out, the rest in.
    assert len(excluded) + len(included) == len(model.trainable_variables)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf_function"])
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_optimizer_steps_against_numpy(kind, graph):
    rng = np.random.RandomState(0)
    shapes = {"layer/kernel": (3, 4), "layer/bias": (4,), "enc/LayerNorm/gamma": (4,),
              "head/output_weights": (2, 3), "zero/kernel": (2, 2)}
    init = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
    init["zero/kernel"][:] = 0.0                                       # ||w|| = 0 -> trust ratio 1.0
    names = list(shapes)

    # tf.Variable names keep the "/" of the paths; `variable_path` strips the ":0".
    variables = [tf.Variable(init[name], name=name) for name in names]
    assert [optimization.variable_path(var) for var in variables] == names
    opt = optimization.create_optimizer(0.05, num_train_steps=8, num_warmup_steps=3, optimizer=kind,
                                        start_warmup_step=1)
    opt.build(variables)

    apply = opt.apply_gradients
    if graph:                       # the training loop's form: the variables' updates chained in one graph
        apply = tf.function(lambda grads_and_vars: opt.apply_gradients(grads_and_vars))
    params = {n: init[n].astype(np.float64) for n in names}
    m = {n: np.zeros(shapes[n]) for n in names}
    v = {n: np.zeros(shapes[n]) for n in names}
    for step in range(7):                                              # crosses warm-up end and the decay
        grads = {n: rng.normal(scale=0.5 if step % 2 else 3.0, size=shapes[n]).astype(np.float32)
                 for n in names}
        apply([(tf.constant(grads[n]), var) for n, var in zip(names, variables)])
        lr = np_learning_rate(step, 0.05, 8, 3, start_warmup_step=1)
        np_step(params, {n: grads[n].astype(np.float64) for n in names}, m, v, names, lr, kind)
        for n, var in zip(names, variables):
            np.testing.assert_allclose(var.numpy(), params[n], rtol=2e-5, atol=2e-6,
                                       err_msg=f"{kind} step {step + 1} {n}")
    assert int(opt.iterations) == 7
    # The update actually moved the zero-norm kernel and the excluded variables.
    assert np.abs(variables[names.index("zero/kernel")].numpy()).sum() > 0


def measure_update_peak(kind):
    """The allocator peak of one optimizer update of six 4 MiB kernels, in units of one kernel (run by
    `fresh_process.run_measurement`, in a process whose allocator keeps statistics)."""
    shapes = [(1024, 1024)] * 6 + [(1024,)] * 2
    variables = [tf.Variable(tf.random.normal(shape, stddev=0.02), name=f"layer_{i}/kernel")
                 for i, shape in enumerate(shapes)]
    opt = optimization.create_optimizer(1e-4, 1000, 10, optimizer=kind)
    opt.build(variables)
    grads = [tf.random.normal(shape) for shape in shapes]
    update = tf.function(lambda grads: opt.apply_gradients(zip(grads, variables)))
    update(grads)                                        # traced and compiled outside the measured call
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    update(grads)
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"] - before
    return peak / (1024 * 1024 * 4)


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_update_temporaries_of_one_variable_at_a_time(kind):
    """In a `tf.function`, the update clips inside each variable's step (no clipped copy of every gradient),
    runs each variable's step as one XLA computation, and starts a variable's step after the previous one's
    assignments: the update's peak memory is a few times the largest variable, whatever their number (the
    unchained, unfused update of these six 4 MiB kernels peaked at 21-22 times one kernel)."""
    ratio = run_measurement("training.test_optimization", "measure_update_peak", kind)
    assert ratio < 6.0, ratio


def test_lamb_differs_from_adamw():
    # Guard against the trust ratio silently being 1: the two optimizers must disagree on a kernel.
    results = {}
    for kind in ("adamw", "lamb"):
        var = tf.Variable(np.full((4, 4), 3.0, np.float32))
        opt = optimization.create_optimizer(0.1, 10, 0, optimizer=kind)
        opt.apply_gradients([(tf.ones((4, 4)) * 0.1, var)])
        results[kind] = var.numpy()
    assert not np.allclose(results["adamw"], results["lamb"])


def test_checkpoint_restores_slots_and_iterations(tmp_path):
    var = tf.Variable(np.ones((3,), np.float32), name="w_kernel")
    opt = optimization.create_optimizer(0.1, 10, 2, optimizer="lamb")
    for _ in range(3):
        opt.apply_gradients([(tf.constant([0.1, -0.2, 0.3]), var)])
    prefix = tf.train.Checkpoint(v=var, optimizer=opt).save(str(tmp_path / "ckpt"))
    var2 = tf.Variable(np.zeros((3,), np.float32), name="w_kernel")
    opt2 = optimization.create_optimizer(0.1, 10, 2, optimizer="lamb")
    opt2.build([var2])
    tf.train.Checkpoint(v=var2, optimizer=opt2).restore(prefix).assert_consumed()
    assert int(opt2.iterations) == 3
    for restored, saved in zip(opt2.slots(var2), opt.slots(var)):
        np.testing.assert_array_equal(restored.numpy(), saved.numpy())
    grad = tf.constant([0.5, 0.5, -0.5])
    opt.apply_gradients([(grad, var)])
    opt2.apply_gradients([(grad, var2)])
    np.testing.assert_allclose(var2.numpy(), var.numpy(), rtol=1e-6)


def test_bad_optimizer_name():
    with pytest.raises(ValueError, match="optimizer"):
        optimization.create_optimizer(1e-3, 10, 1, optimizer="sgd")


@pytest.mark.parametrize("dense", [False, True])
def test_the_clip_norm_of_an_embedding_lookup_is_the_originals_of_each_device(dense):
    """The clip's global norm of a `tf.gather` gradient with repeated ids: each occurrence counted (the original on
    CPU/GPU, the default here) or the repeats summed first (`dense_gradient_norm=True`: its one-hot lookups on TPU,
    and the JAX backend), each against the NumPy norm of that form."""
    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0)
    ids = tf.constant([1, 1, 1, 3])
    upstream = np.array([[1.0, 2.0, 0.5], [0.5, 1.0, 2.0], [1.5, 0.5, 0.5], [2.0, 1.0, 1.0]], np.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, ids) * upstream)
    grad = tape.gradient(loss, table)
    assert isinstance(grad, tf.IndexedSlices)
    opt = optimization.AdamWeightDecay(learning_rate=0.1, clip_norm=1.0, dense_gradient_norm=dense or None)
    opt.apply([grad], [table])
    summed = np.zeros((4, 3), np.float32)
    np.add.at(summed, ids.numpy(), upstream)
    want = np.linalg.norm(summed) if dense else np.linalg.norm(upstream)
    np.testing.assert_allclose(float(opt.gradient_norm.numpy()), want, rtol=1e-6)
    assert abs(np.linalg.norm(summed) - np.linalg.norm(upstream)) > 0.5      # the two norms differ here
