"""The custom training loop: loss goes down, distribution equivalence, resume after SIGKILL, NaN stop, eval."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.tasks.pretraining.model import pretraining_loss
from albert_tf.training import distribution, loop, optimization
from training_fixtures import TINY, _env, _free_ports, _load, _wait, make_features


# One script for every subprocess test: `python worker.py <json args>`; it trains the tiny pretrainer with
# a deterministic input pipeline and writes its final weights to `<out>.npz`.
WORKER = textwrap.dedent('''
    import json, os, sys, threading, time
    args = json.loads(sys.argv[1])
    import tensorflow as tf
    from absl import logging
    logging.set_verbosity(logging.INFO)
    if args.get("logical_cpus"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] *
                                                   args["logical_cpus"])
    tf.config.experimental.enable_op_determinism()
    import numpy as np
    sys.path[:0] = [args["tests_dir"], os.path.dirname(args["tests_dir"])]   # the module, the shared helpers
    from test_training_loop import make_features, train_once
    from albert_tf.training import distribution, loop
    if args.get("kill_after_checkpoint"):
        target = os.path.join(args["model_dir"], "model.ckpt-%d.index" % args["kill_after_checkpoint"])
        def watch():
            while not os.path.exists(target):
                time.sleep(0.002)
            os.kill(os.getpid(), 9)
        threading.Thread(target=watch, daemon=True).start()
    for run in args["runs"]:
        strategy = distribution.get_strategy(run["strategy"])
        weights, result = train_once(strategy, run["model_dir"], **run["kwargs"])
        np.savez(run["out"], *weights)
        with open(run["out"] + ".json", "w") as f:
            json.dump(result, f)
''')


def pretraining_loss_fn(model, features, training):
    total, mlm, sop = pretraining_loss(model(features, training=training), features)
    return total, {"masked_lm_loss": mlm, "sentence_order_loss": sop}


def train_once(strategy, model_dir, num_train_steps=6, global_batch=4, iterations_per_loop=2,
               save_checkpoints_steps=2, accumulation=1, shuffle_seed=None, optimizer="lamb", lr=1e-2,
               num_examples=16, jit_compile=False, loss_factor=1.0, recompute=False):
    features = make_features(num_examples)

    def loss_fn(model, features, training):
        loss, metrics = pretraining_loss_fn(model, features, training)
        return loss * loss_factor, metrics

    def dataset_fn(context):
        per_replica = context.get_per_replica_batch_size(global_batch) // accumulation
        ds = tf.data.Dataset.from_tensor_slices(features)
        if context.num_input_pipelines > 1:
            ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)
        ds = ds.repeat()
        if shuffle_seed is not None:
            ds = ds.shuffle(8, seed=shuffle_seed)
        return ds.batch(per_replica, drop_remainder=True)

    keras_seed = 1234
    tf.keras.utils.set_random_seed(keras_seed)
    with strategy.scope():
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(TINY), recompute=recompute)
        if optimizer == "sgd":
            opt = tf.keras.optimizers.SGD(lr)
        else:
            opt = optimization.create_optimizer(lr, num_train_steps, 2, optimizer=optimizer)
    result = loop.run_training(model, opt, loss_fn, dataset_fn, strategy, model_dir, num_train_steps,
                               iterations_per_loop=iterations_per_loop,
                               save_checkpoints_steps=save_checkpoints_steps, keep_checkpoint_max=3,
                               gradient_accumulation_steps=accumulation, jit_compile=jit_compile)
    return [np.asarray(v.numpy()) for v in model.trainable_variables], result


def run_worker(tmp_path, args, timeout=150, env=None):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    args = dict(args, tests_dir=os.path.dirname(os.path.abspath(__file__)))
    return subprocess.Popen([sys.executable, str(script), json.dumps(args)], env=env or _env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_short_run_lowers_loss_and_writes_checkpoints(tmp_path):
    strategy = distribution.get_strategy("one_device")
    model_dir = str(tmp_path / "run")
    features = make_features(4)
    with strategy.scope():
        tf.keras.utils.set_random_seed(0)
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(TINY))
        opt = optimization.create_optimizer(1e-2, 20, 2, optimizer="lamb")

    def dataset_fn(context):
        return tf.data.Dataset.from_tensor_slices(features).repeat().batch(4, drop_remainder=True)

    before = float(pretraining_loss_fn(model, features, False)[0])
    result = loop.run_training(model, opt, pretraining_loss_fn, dataset_fn, strategy, model_dir, 20,
                               iterations_per_loop=5, save_checkpoints_steps=10, keep_checkpoint_max=5)
    after = float(pretraining_loss_fn(model, features, False)[0])
    assert result["global_step"] == 20 and int(opt.iterations) == 20
    assert after < before - 0.5, (before, after)
    assert set(result) >= {"loss", "masked_lm_loss", "sentence_order_loss"}
    assert [step for step, _ in loop.list_checkpoints(model_dir)] == [10, 20]
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(model_dir))
    # A second call finds the job finished and trains nothing.
    again = loop.run_training(model, opt, pretraining_loss_fn, dataset_fn, strategy, model_dir, 20)
    assert again == {"global_step": 20}

    # evaluate_checkpoints: restores each checkpoint, keeps the best as model.ckpt-best, writes the files.
    def eval_fn(m):
        return {"masked_lm_loss": float(pretraining_loss_fn(m, features, False)[1]["masked_lm_loss"])}

    fresh = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(TINY))
    out_dir = str(tmp_path / "eval")
    best_step, best = loop.evaluate_checkpoints(fresh, model_dir, eval_fn, "masked_lm_loss", out_dir,
                                                higher_is_better=False)
    assert best_step == 20 and best["global_step"] == 20
    text = open(os.path.join(out_dir, "eval_results.txt")).read()
    assert "global_step = 10" in text and "global_step = 20" in text
    assert open(os.path.join(out_dir, "best_trial.txt")).read() == f"20:20:{best['masked_lm_loss']}"
    assert os.path.exists(os.path.join(out_dir, "model.ckpt-best.index"))
    restored = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(TINY))
    restore_checkpoint(restored, os.path.join(out_dir, "model.ckpt-best"))
    for a, b in zip(restored.trainable_variables, model.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _assert_same_training(a, b, loose=False):
    (weights_a, result_a), (weights_b, result_b) = a, b
    assert result_a["global_step"] == result_b["global_step"]
    np.testing.assert_allclose(result_a["loss"], result_b["loss"], rtol=1e-4)
    if loose:
        # ALBERT's Adam has no bias correction: its first steps are ~lr * sign(g), so entries whose gradient
        # is ~0 amplify summation-order noise; compare the aggregated gradient norm tightly instead.
        np.testing.assert_allclose(result_a["gradient_norm"], result_b["gradient_norm"], rtol=1e-3)
        tolerance = dict(rtol=1e-3, atol=3e-4)
    else:
        tolerance = dict(rtol=1e-5, atol=1e-6)
    for x, y in zip(weights_a, weights_b):
        np.testing.assert_allclose(x, y, **tolerance)


def test_gradient_accumulation_equals_full_batch(tmp_path):
    strategy = distribution.get_strategy("one_device")
    full = train_once(strategy, str(tmp_path / "full"), num_train_steps=3, optimizer="sgd", lr=0.5)
    accumulated = train_once(strategy, str(tmp_path / "acc"), num_train_steps=3, accumulation=2,
                             optimizer="sgd", lr=0.5)
    _assert_same_training(full, accumulated)
    # Control: half the batch without accumulation is clearly different.
    half, _ = train_once(strategy, str(tmp_path / "half"), num_train_steps=3, global_batch=2, optimizer="sgd",
                         lr=0.5)
    assert max(np.abs(x - y).max() for x, y in zip(full[0], half)) > 1e-3


def test_nan_loss_stops_and_keeps_last_checkpoint(tmp_path):
    strategy = distribution.get_strategy("one_device")
    model_dir = str(tmp_path / "nan")
    features = make_features(4)
    with strategy.scope():
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(TINY))
        opt = optimization.create_optimizer(1e-3, 10, 0, optimizer="adamw")

    def loss_fn(m, f, training):
        loss, metrics = pretraining_loss_fn(m, f, training)
        # Poison the loss from the 4th step (iterations is 3 while step 4 runs).
        poison = tf.where(opt.iterations >= 3, float("nan"), 1.0)
        return loss * poison, metrics

    def dataset_fn(context):
        return tf.data.Dataset.from_tensor_slices(features).repeat().batch(4, drop_remainder=True)

    with pytest.raises(FloatingPointError, match="Non-finite loss"):
        loop.run_training(model, opt, loss_fn, dataset_fn, strategy, model_dir, 10, iterations_per_loop=2,
                          save_checkpoints_steps=2)
    assert [step for step, _ in loop.list_checkpoints(model_dir)] == [2]
    assert tf.train.latest_checkpoint(model_dir).endswith("model.ckpt-2")


def test_mirrored_two_cpus_equals_one_device(tmp_path):
    runs = []
    # LAMB with the loss x10: the summed gradient norm is > 1, so clipping after the all-reduce matters.
    for kind, lr, factor in (("sgd", 0.5, 1.0), ("lamb", 1e-2, 10.0)):
        for strategy in ("one_device", "mirrored"):
            name = f"{strategy}_{kind}"
            runs.append(dict(strategy=strategy, model_dir=str(tmp_path / name), out=str(tmp_path / f"{name}.npz"),
                             kwargs=dict(global_batch=4, num_train_steps=4, optimizer=kind, lr=lr,
                                         loss_factor=factor)))
    code, out = _wait(run_worker(tmp_path, dict(logical_cpus=2, runs=runs)), 200)
    assert code == 0, out[-3000:]
    assert "MirroredStrategy with 2 replica(s)" in out
    for kind in ("sgd", "lamb"):
        one = (_load(str(tmp_path / f"one_device_{kind}.npz")),
               json.load(open(str(tmp_path / f"one_device_{kind}.npz.json"))))
        two = (_load(str(tmp_path / f"mirrored_{kind}.npz")),
               json.load(open(str(tmp_path / f"mirrored_{kind}.npz.json"))))
        assert len(one[0]) == len(two[0]) > 10
        _assert_same_training(one, two, loose=kind == "lamb")
    assert json.load(open(str(tmp_path / "mirrored_lamb.npz.json")))["gradient_norm"] > 2.0


@pytest.mark.slow  # ~160 s on 2 shared CPU cores: two pairs of TF processes plus the collective setup.
def test_multi_worker_two_processes_end_with_equal_weights(tmp_path):
    """Two workers end with equal weights; with `recompute` they end with the same weights as without it."""
    final = {}
    for recompute in (False, True):
        ports = _free_ports(2)
        model_dir = str(tmp_path / f"mw_{recompute}")
        procs = []
        for index in range(2):
            out = str(tmp_path / f"w{index}_{recompute}.npz")
            runs = [dict(strategy="multi_worker", model_dir=model_dir, out=out,
                         kwargs=dict(global_batch=4, num_train_steps=4, recompute=recompute))]
            env = _env(TF_CONFIG=distribution.tf_config_for_local_workers(ports, index))
            procs.append(run_worker(tmp_path, dict(runs=runs), env=env))
        results = [_wait(p, 180) for p in procs]
        for code, out in results:
            assert code == 0, out[-3000:]
        w0, w1 = _load(str(tmp_path / f"w0_{recompute}.npz")), _load(str(tmp_path / f"w1_{recompute}.npz"))
        for a, b in zip(w0, w1):
            np.testing.assert_array_equal(a, b)
        assert json.load(open(str(tmp_path / f"w0_{recompute}.npz") + ".json"))["global_step"] == 4
        # The chief wrote the checkpoints; the other worker's scratch directory is gone.
        assert [step for step, _ in loop.list_checkpoints(model_dir)] == [2, 4]
        assert not [d for d in os.listdir(model_dir) if d.startswith(".tmp_")]
        final[recompute] = w0
    for a, b in zip(final[False], final[True]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # ~80 s: three subprocess runs of 24 one-step loops.
def test_sigkill_and_restart_matches_uninterrupted_run(tmp_path):
    common = dict(num_train_steps=24, global_batch=4, iterations_per_loop=1, save_checkpoints_steps=4,
                  shuffle_seed=7, num_examples=12)
    straight = dict(strategy="one_device", model_dir=str(tmp_path / "straight"),
                    out=str(tmp_path / "straight.npz"), kwargs=common)
    resumed = dict(strategy="one_device", model_dir=str(tmp_path / "resumed"),
                   out=str(tmp_path / "resumed.npz"), kwargs=common)
    killed = run_worker(tmp_path, dict(runs=[resumed], kill_after_checkpoint=8,
                                       model_dir=resumed["model_dir"]))
    code, out = _wait(killed, 150)
    assert code == -signal.SIGKILL, out[-3000:]
    steps_at_kill = [step for step, _ in loop.list_checkpoints(resumed["model_dir"])]
    assert 8 in steps_at_kill and 24 not in steps_at_kill, steps_at_kill
    assert not os.path.exists(resumed["out"])
    code, out = _wait(run_worker(tmp_path, dict(runs=[resumed, straight])), 150)
    assert code == 0, out[-3000:]
    assert "Resuming from" in out
    assert json.load(open(resumed["out"] + ".json"))["global_step"] == 24
    a, b = _load(resumed["out"]), _load(straight["out"])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_mixed_float16_with_loss_scaling_and_jit(tmp_path):
    strategy = distribution.get_strategy("one_device")
    distribution.set_mixed_precision("mixed_float16")
    try:
        with strategy.scope():
            opt = optimization.create_optimizer(1e-3, 4, 1, optimizer="lamb")
        assert isinstance(opt, tf.keras.optimizers.LossScaleOptimizer)
        weights, result = train_once(strategy, str(tmp_path / "fp16"), num_train_steps=4, jit_compile=True)
    finally:
        distribution.set_mixed_precision("float32")
    assert result["global_step"] == 4 and np.isfinite(result["loss"])
    assert all(w.dtype == np.float32 and np.all(np.isfinite(w)) for w in weights)
