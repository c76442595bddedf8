"""Exact resume under every strategy: the seeded positional input stream, and SIGKILL + restart under
MirroredStrategy and MultiWorkerMirroredStrategy ending with the weights of an uninterrupted run."""

import contextlib
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import features as features_lib
from albert_tf.tasks.glue import data as glue
from albert_tf.data import record_stream as positional
from albert_tf.tasks.pretraining.inputs import pretraining_dataset
from albert_tf.errors import InputError
from albert_tf.training import distribution

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
from training_fixtures import PRED, SEQ, TINY, _env, _free_ports, _load, _wait, make_features  # noqa: E402


def _write_named_records(directory, lengths):
    """Files `f<i>.rec` of `lengths[i]` records `b"f<i>-r<j>"`."""
    files = []
    for i, n in enumerate(lengths):
        path = os.path.join(str(directory), f"f{i}.rec")
        with tf.io.TFRecordWriter(path) as writer:
            for j in range(n):
                writer.write(f"f{i}-r{j}".encode())
        files.append(path)
    return files


def _take(dataset, n):
    return [x.decode() for x in dataset.take(n).as_numpy_iterator()]


def _context(pipelines, pipeline_id):
    return tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=pipeline_id,
                                      num_replicas_in_sync=pipelines)


def test_count_records_reads_headers(tmp_path):
    files = _write_named_records(tmp_path, [5, 9, 0, 1])
    assert [positional.count_records(f) for f in files] == [
        sum(1 for _ in tf.data.TFRecordDataset(f)) for f in files] == [5, 9, 0, 1]
    # A truncated file (a partly written shard) is an InputError naming it.
    data = open(files[1], "rb").read()
    truncated = str(tmp_path / "truncated.rec")
    open(truncated, "wb").write(data[:-3])
    with pytest.raises(InputError, match="truncated.rec"):
        positional.count_records(truncated)


@pytest.mark.parametrize("cycle_length,block_size", [(2, 4), (1, 7)])
def test_stream_from_any_start_is_the_tail(tmp_path, cycle_length, block_size):
    # Unequal files (one empty), total 25 records per epoch: starts cross block, group and epoch boundaries.
    files = _write_named_records(tmp_path, [5, 9, 1, 7, 3, 0])
    full = _take(positional.positional_records(files, 11, cycle_length=cycle_length, block_size=block_size), 130)
    for start in (3, 4, 5, 13, 24, 25, 26, 37, 61, 99):
        tail = positional.positional_records(files, 11, start, cycle_length=cycle_length, block_size=block_size)
        assert _take(tail, 30) == full[start:start + 30], start
    # Another seed, another order.
    assert _take(positional.positional_records(files, 12, cycle_length=cycle_length, block_size=block_size),
                 130) != full


@pytest.mark.parametrize("lengths,pipelines", [([5, 9, 1, 7, 3], 2), ([4, 7], 3)])
def test_stream_of_several_pipelines(tmp_path, lengths, pipelines):
    """File sharding (at least as many files as pipelines) and record sharding (fewer): each pipeline's stream
    from R is the tail of its stream from 0, and the pipelines together read each record once per epoch."""
    files = _write_named_records(tmp_path, lengths)
    streams = []
    for p in range(pipelines):
        context = _context(pipelines, p)
        full = _take(positional.positional_records(files, 5, 0, context, cycle_length=2, block_size=3), 60)
        for start in (2, 7, 11, 29):
            tail = positional.positional_records(files, 5, start, context, cycle_length=2, block_size=3)
            assert _take(tail, 20) == full[start:start + 20], (p, start)
        streams.append(full)
    names = sorted(f"f{i}-r{j}" for i, n in enumerate(lengths) for j in range(n))
    if len(files) >= pipelines:
        # Pipeline p reads files p::pipelines, all of their records in each of its epochs.
        for p, stream in enumerate(streams):
            own = sorted(f"f{i}-r{j}" for i, n in enumerate(lengths) if i % pipelines == p for j in range(n))
            assert set(stream) == set(own)
    else:
        # Records p::pipelines of the stream of all files: block size 3 divides 6 x 11 records.
        merged = [streams[k % pipelines][k // pipelines] for k in range(6 * len(names))]
        assert sorted(merged) == sorted(names * 6)
        single = _take(positional.positional_records(files, 5, cycle_length=2, block_size=3), 6 * len(names))
        assert merged == single


def test_every_record_once_per_epoch(tmp_path):
    lengths = [5, 9, 1, 7, 3]
    files = _write_named_records(tmp_path, lengths)
    names = sorted(f"f{i}-r{j}" for i, n in enumerate(lengths) for j in range(n))
    base, _ = positional.base_stream(files, 3, 2)
    epochs = [_take(base.skip(25 * e), 25) for e in range(4)]
    assert all(sorted(epoch) == names for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) > 1      # the file order changes with the epoch
    # With the block permutation (blocks of 5 divide the 25-record epochs), still once per epoch.
    stream = _take(positional.positional_records(files, 3, cycle_length=2, block_size=5), 100)
    assert all(sorted(stream[25 * e:25 * (e + 1)]) == names for e in range(4))
    assert stream[:25] != epochs[0]                       # and shuffled within blocks


def test_skip_reads_no_payload_of_skipped_records(tmp_path):
    """The skipped whole files are not opened after their header scan (they are deleted then), and the
    records skipped inside the group reached are stepped over by header (their payloads are corrupted)."""
    lengths = [5, 9, 1, 7, 3, 6]
    files = _write_named_records(tmp_path, lengths)
    seed, cycle_length = 21, 2
    full = _take(positional.positional_records(files, seed, cycle_length=cycle_length, block_size=1), 31)
    order = positional.file_order(len(files), seed, 0)
    groups = [order[i:i + cycle_length] for i in range(0, len(files), cycle_length)]
    # Start 3 records into the second group of epoch 0.
    skipped_files = groups[0]
    start = sum(lengths[i] for i in skipped_files) + 3
    dataset = positional.positional_records(files, seed, start, cycle_length=cycle_length, block_size=1)
    for i in skipped_files:
        os.remove(files[i])
    # The round-robin's first 3 positions of group 1: how many records each of its files gives.
    taken = {i: 0 for i in groups[1]}
    while sum(taken.values()) < 3:
        for i in groups[1]:
            if taken[i] < lengths[i] and sum(taken.values()) < 3:
                taken[i] += 1
    for i, count in taken.items():
        # Overwrite the payload bytes of the records skipped in this file.
        data = bytearray(open(files[i], "rb").read())
        offset = 0
        for _ in range(count):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            data[offset + 12:offset + 12 + length] = b"#" * length
            offset += 12 + length + 4
        open(files[i], "wb").write(bytes(data))
    # The rest of epoch 0 reads only files of groups 1 and 2, past the corrupted records.
    rest_of_epoch = sum(lengths) - start
    assert _take(dataset, rest_of_epoch) == full[start:start + rest_of_epoch]
    # Control: reading those corrupted records (not skipping them) fails on their checksums.
    assert taken[groups[1][0]] > 0
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(files[groups[1][0]]))


def test_bad_inputs(tmp_path):
    files = _write_named_records(tmp_path, [0, 0])
    with pytest.raises(InputError, match="no record"):
        positional.positional_records(files, 1, 5, block_size=2)
    with pytest.raises(InputError, match="random_seed"):
        positional.positional_records(files, "7")
    with pytest.raises(InputError, match="random_seed"):
        pretraining_dataset(files, SEQ, PRED, 2, True, start_batch=3)     # unseeded input cannot skip


def _pretraining_example(features, index):
    f = {name: values[index] for name, values in features.items()}
    fields = {name: (features_lib.float_feature(v) if v.dtype == np.float32 else features_lib.int64_feature(v))
              for name, v in f.items()}
    fields["token_boundary"] = features_lib.int64_feature([0] * SEQ)
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def write_pretraining_files(directory, lengths):
    """Pretraining TFRecords of `make_features` examples, `lengths[i]` in file i (example ids in order)."""
    features = make_features(sum(lengths))
    files, index = [], 0
    os.makedirs(directory, exist_ok=True)
    for i, n in enumerate(lengths):
        path = os.path.join(str(directory), f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(n):
                writer.write(_pretraining_example(features, index))
                index += 1
        files.append(path)
    return files


def test_readers_start_at_a_batch(tmp_path):
    """`pretraining_dataset` and GLUE's `file_based_dataset` with a seed: from batch b = the tail from b."""
    files = write_pretraining_files(tmp_path / "pre", [7, 4, 6])

    def ids(dataset, n):
        return [row.tolist() for batch in dataset.take(n) for row in batch["input_ids"].numpy()]

    context = _context(2, 1)
    full = ids(pretraining_dataset(files, SEQ, PRED, 3, True, context, seed=4, shuffle_buffer=5), 12)
    for start in (1, 4, 7):
        tail = pretraining_dataset(files, SEQ, PRED, 3, True, context, seed=4, start_batch=start, shuffle_buffer=5)
        assert ids(tail, 12 - start) == full[3 * start:]

    path = str(tmp_path / "train.tf_record")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(9):
            feature = glue.InputFeatures([i] * 4, [1] * 4, [0] * 4, i % 2)
            writer.write(glue.feature_to_tf_example(feature, "mrpc").SerializeToString())
    for pipelines in (1, 2):
        context = _context(pipelines, pipelines - 1)
        full = ids(glue.file_based_dataset(path, 4, True, True, "mrpc", 2, context, seed=9), 120)
        assert ids(glue.file_based_dataset(path, 4, True, True, "mrpc", 2, context, seed=9, start_batch=53),
                   10) == full[106:126]


# `python worker.py <json args>`: trains the tiny pretrainer on positional pretraining TFRecords, through the
# driver and the pretraining task ("driver") or `loop.run_training` with a small shuffle block ("loop"), and
# writes its final weights to `<out>.npz`. With `kill_after`, the process SIGKILLs itself once the chief's
# checkpoint state names that step.
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
    from test_resume_strategies import train_positional
    from albert_tf.training import distribution
    if args.get("kill_after"):
        state = os.path.join(args["runs"][0]["model_dir"], "checkpoint")
        wanted = 'model_checkpoint_path: "model.ckpt-%d"' % args["kill_after"]
        def watch():
            while True:
                try:
                    with open(state) as f:
                        if wanted in f.read():
                            os.kill(os.getpid(), 9)
                except OSError:
                    pass
                time.sleep(0.002)
        threading.Thread(target=watch, daemon=True).start()
    strategy = distribution.get_strategy(args["strategy"])
    for run in args["runs"]:
        weights, result = train_positional(strategy, run["model_dir"], **args["kwargs"])
        np.savez(run["out"], *weights)
        with open(run["out"] + ".json", "w") as f:
            json.dump(result, f)
''')


def train_positional(strategy, model_dir, files, path="driver", num_train_steps=7, global_batch=4,
                     save_checkpoints_steps=3, seed=5):
    """Trains the tiny pretrainer on `files` with a seeded positional input; returns (weights, result)."""
    import albert_tf
    from albert_tf.training import driver, loop, optimization
    from albert_tf.options import RuntimeOptions
    from albert_tf.tasks.pretraining.task import PretrainingOptions, PretrainingTask, pretraining_loss_fn

    tf.keras.utils.set_random_seed(1234)
    config = albert_tf.AlbertConfig.from_dict(TINY)
    if path == "driver":
        config_file = model_dir.rstrip("/") + "_config.json"
        config.to_json_file(config_file)
        options = PretrainingOptions(albert_config_file=config_file, input_file=",".join(files), output_dir=model_dir,
                                     max_seq_length=SEQ, max_predictions_per_seq=PRED, optimizer="lamb",
                                     num_train_steps=num_train_steps, num_warmup_steps=1, learning_rate=1e-2,
                                     train_batch_size=global_batch, save_checkpoints_steps=save_checkpoints_steps,
                                     keep_checkpoint_max=5)
        runtime = driver.Runtime(RuntimeOptions(random_seed=seed, iterations_per_loop=1), options,
                                 contextlib.ExitStack())
        runtime.strategy = strategy
        task = PretrainingTask(options, runtime)
        with strategy.scope():
            model = task.build_model()
        result = driver.train(task, model, runtime, model_dir)
        result.pop("num_train_steps")
    else:
        with strategy.scope():
            model = albert_tf.AlbertPretrainer(config)
            opt = optimization.create_optimizer(1e-2, num_train_steps, 1, optimizer="lamb")

        def dataset_fn(context, start_batch):
            # One file per interleave group and shuffle blocks of 4: the resume skips whole files and blocks.
            return pretraining_dataset(files, SEQ, PRED, context.get_per_replica_batch_size(global_batch), True,
                                       context, num_cpu_threads=1, seed=seed, start_batch=start_batch,
                                       shuffle_buffer=4)

        result = loop.run_training(model, opt, pretraining_loss_fn, dataset_fn, strategy, model_dir,
                                   num_train_steps, iterations_per_loop=1,
                                   save_checkpoints_steps=save_checkpoints_steps, keep_checkpoint_max=5,
                                   positional_input=True)
    return [np.asarray(v.numpy()) for v in model.trainable_variables], result


def _start(tmp_path, args, env=None):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    args = dict(args, tests_dir=TESTS_DIR)
    return subprocess.Popen([sys.executable, str(script), json.dumps(args)], env=env or _env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _max_abs_difference(a, b):
    assert len(a) == len(b) > 10
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def _check_killed(results, model_dir, kill_after):
    for code, out in results:
        assert code == -9, out[-3000:]
    steps = [int(name.split("-")[1].split(".")[0]) for name in os.listdir(model_dir) if name.endswith(".index")]
    assert kill_after in steps and max(steps) < 7, steps


@pytest.mark.e2e
def test_mirrored_sigkill_and_restart_equals_uninterrupted_run(tmp_path):
    """2 replicas, 1 input pipeline, through the driver's pretraining task: 10 records per epoch, 4 per step;
    killed after the step-3 checkpoint (record 12: epoch 1, record 2), resumed, against a straight run."""
    files = write_pretraining_files(tmp_path / "data", [3, 7])
    resumed, straight = str(tmp_path / "resumed"), str(tmp_path / "straight")
    base = dict(logical_cpus=2, strategy="mirrored", kwargs=dict(files=files, path="driver"))
    run = dict(model_dir=resumed, out=str(tmp_path / "resumed.npz"))
    results = [_wait(_start(tmp_path, dict(base, runs=[run], kill_after=3)), 120)]
    _check_killed(results, resumed, 3)
    runs = [run, dict(model_dir=straight, out=str(tmp_path / "straight.npz"))]
    code, out = _wait(_start(tmp_path, dict(base, runs=runs)), 150)
    assert code == 0, out[-3000:]
    assert "MirroredStrategy with 2 replica(s)" in out and "model.ckpt-3" in out
    assert "Input pipeline 0/1 resumes at its record 12" in out, out[-3000:]
    assert json.load(open(str(tmp_path / "resumed.npz.json")))["global_step"] == 7
    difference = _max_abs_difference(_load(str(tmp_path / "resumed.npz")), _load(str(tmp_path / "straight.npz")))
    print(f"Mirrored: max abs difference resumed vs uninterrupted = {difference}")
    assert difference == 0.0


@pytest.mark.e2e
def test_multi_worker_sigkill_and_restart_equals_uninterrupted_run(tmp_path):
    """2 worker processes, 2 input pipelines (file sharding: files 0, 2 and 1, 3), shuffle blocks of 4, 2
    records per pipeline per step: killed after the step-3 checkpoint (record 6 of 7 and of 11), resumed."""
    files = write_pretraining_files(tmp_path / "data", [3, 5, 4, 6])
    resumed, straight = str(tmp_path / "resumed"), str(tmp_path / "straight")
    base = dict(strategy="multi_worker", kwargs=dict(files=files, path="loop"))

    def start_workers(runs_of, kill_after=None):
        ports = _free_ports(2)
        procs = []
        for index in range(2):
            env = _env(TF_CONFIG=distribution.tf_config_for_local_workers(ports, index))
            args = dict(base, runs=runs_of(index), **({"kill_after": kill_after} if kill_after else {}))
            procs.append(_start(tmp_path, args, env=env))
        return [_wait(p, 150) for p in procs]

    def run(index, name, model_dir):
        return dict(model_dir=model_dir, out=str(tmp_path / f"{name}{index}.npz"))

    _check_killed(start_workers(lambda i: [run(i, "resumed", resumed)], kill_after=3), resumed, 3)
    results = start_workers(lambda i: [run(i, "resumed", resumed), run(i, "straight", straight)])
    for code, out in results:
        assert code == 0, out[-3000:]
        assert "model.ckpt-3" in out
    assert "Input pipeline 0/2 resumes at its record 6" in results[0][1]
    assert "Input pipeline 1/2 resumes at its record 6" in results[1][1]
    assert json.load(open(str(tmp_path / "resumed0.npz.json")))["global_step"] == 7
    resumed_weights = _load(str(tmp_path / "resumed0.npz"))
    assert _max_abs_difference(resumed_weights, _load(str(tmp_path / "resumed1.npz"))) == 0.0
    difference = _max_abs_difference(resumed_weights, _load(str(tmp_path / "straight0.npz")))
    print(f"MultiWorker: max abs difference resumed vs uninterrupted = {difference}")
    assert difference == 0.0
