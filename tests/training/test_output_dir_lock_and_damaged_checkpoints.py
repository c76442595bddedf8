"""Nothing lost, nothing mixed: one run per output directory, resume past damaged checkpoints, strict configs,
damaged TFRecords named (issue 56)."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf import fileio
from albert_tf.commands.app import one_line
from albert_tf.config import REQUIRED_KEYS, AlbertConfig
from albert_tf.errors import InputError
from albert_tf.training import driver, loop
from training_fixtures import train_tiny_classifier
import repo_paths

REPO = repo_paths.REPO
TINY = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)


# --- one writer per output directory ---------------------------------------------------------------------------

_HOLDER = textwrap.dedent("""
    import sys, time
    from albert_tf import fileio
    with fileio.output_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(120)
""")


def _hold_in_child(directory):
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, directory], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO))
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_process_is_refused_naming_the_directory_and_the_holder(tmp_path):
    out = str(tmp_path / "out")
    child = _hold_in_child(out)
    try:
        with pytest.raises(InputError) as caught:
            with fileio.output_lock(out):
                pass
        message = str(caught.value)
        assert f"`{out}` is in use by another run: process {child.pid} on {socket.gethostname()}" in message
        assert "\n" not in message
    finally:
        child.kill()
        child.wait()
    # The child was killed: its lock is stale and is taken over, then released.
    with fileio.output_lock(out):
        with fileio.output_lock(out):   # blocks of one process nest
            held = json.loads(open(os.path.join(out, fileio.LOCK_FILE)).read())
            assert held["pid"] == os.getpid()
    assert not os.path.exists(os.path.join(out, fileio.LOCK_FILE))


def test_a_non_chief_worker_does_not_take_the_lock(tmp_path):
    out = str(tmp_path / "out")
    with fileio.output_lock(out, hold=False):
        assert os.path.isdir(out) and not os.path.exists(os.path.join(out, fileio.LOCK_FILE))


class _NoWorkOptions:
    """The options a `driver.Task` reads, with no stage to run."""

    def __init__(self, output_dir):
        self.output_dir = output_dir
        self.checked_init_path = None

    def stages(self):
        return ()

    def feature_files(self):
        return []


class _NoWorkTask(driver.Task):
    def check(self):
        pass

    def build_model(self, init_path=None):
        return None

    def train_data(self):
        raise AssertionError("no training")

    def loss(self, model, features, training):
        raise AssertionError("no training")

    def evaluate(self, model):
        raise AssertionError("no evaluation")


def test_the_driver_holds_the_output_dir(tmp_path):
    out = str(tmp_path / "out")
    child = _hold_in_child(out)
    try:
        with pytest.raises(InputError, match=f"is in use by another run: process {child.pid}"):
            driver.run(_NoWorkTask, _NoWorkOptions(out))
    finally:
        child.kill()
        child.wait()
    assert driver.run(_NoWorkTask, _NoWorkOptions(out)) == {}
    assert os.listdir(out) == []


# --- resume past damage ---------------------------------------------------------------------------------------

def _train(model_dir, num_train_steps, dropout=0.0):
    return train_tiny_classifier(model_dir, num_train_steps, dropout)


def _data_file(prefix):
    return prefix + ".data-00000-of-00001"


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_a_cut_state_file_does_not_restart_over_intact_checkpoints(tmp_path, caplog):
    model_dir = str(tmp_path / "run")
    _train(model_dir, 4)
    before = {name: _read(os.path.join(model_dir, name)) for name in os.listdir(model_dir)
              if name.startswith("model.ckpt-")}
    state = os.path.join(model_dir, "checkpoint")
    with open(state, "r+b") as f:
        f.truncate(40)
    result, _ = _train(model_dir, 6)
    assert result["global_step"] == 6
    for name, data in before.items():   # model.ckpt-2 and -4 as they were
        assert _read(os.path.join(model_dir, name)) == data
    assert tf.train.latest_checkpoint(model_dir).endswith("model.ckpt-6")
    assert "does not name" in caplog.text and "model.ckpt-4 (damaged or stale)" in caplog.text


@pytest.mark.parametrize("damage,dropout", [("truncated", 0.0), ("flipped byte", 0.1)])
def test_a_damaged_newest_checkpoint_is_moved_aside_and_the_run_ends_as_an_uninterrupted_one(tmp_path, caplog,
                                                                                            damage, dropout):
    # The uninterrupted run: what the resumed one must end with, to the bit (the checkpoints hold the input
    # position, the optimizer's slots and the dropout seed generators' states).
    _, expected = _train(str(tmp_path / "uninterrupted"), 4, dropout)
    model_dir = str(tmp_path / "run")
    _train(model_dir, 4, dropout)
    data_file = _data_file(os.path.join(model_dir, "model.ckpt-4"))
    data = bytearray(_read(data_file))
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2] ^= 0x10
    with open(data_file, "wb") as f:
        f.write(bytes(data))
    intact = _read(_data_file(os.path.join(model_dir, "model.ckpt-2")))
    result, weights = _train(model_dir, 4, dropout)
    assert result["global_step"] == 4
    # Resumed from model.ckpt-2 and trained steps 3-4 again.
    assert len(weights) == len(expected)
    for a, b in zip(weights, expected):
        np.testing.assert_array_equal(a, b)
    assert _read(_data_file(os.path.join(model_dir, "model.ckpt-2"))) == intact
    assert _read(_data_file(os.path.join(model_dir, "model.ckpt-4-damaged"))) == bytes(data)
    warning = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    assert len(warning) == 1 and "model.ckpt-4 is damaged" in warning[0] and "model.ckpt-4-damaged" in warning[0]


def test_every_checkpoint_damaged_stops_the_run(tmp_path):
    model_dir = str(tmp_path / "run")
    _train(model_dir, 2)
    data_file = _data_file(os.path.join(model_dir, "model.ckpt-2"))
    with open(data_file, "r+b") as f:
        f.truncate(10)
    with pytest.raises(InputError, match="Every checkpoint in .* is damaged"):
        _train(model_dir, 4)
    assert os.path.exists(_data_file(os.path.join(model_dir, "model.ckpt-2-damaged")))


def test_pruning_after_evaluation_rewrites_the_state_file(tmp_path):
    """The evaluation keeps the best and the latest checkpoint (`delete_non_best`, as the original prunes): the
    `checkpoint` state file then names those two only, none that is gone (issue 56's two-runs row)."""
    model_dir = str(tmp_path / "run")
    _train(model_dir, 6)
    model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(TINY), num_labels=2)
    scores = iter([0.5, 0.9, 0.7])   # model.ckpt-4 the best

    def eval_fn(_):
        return {"eval_accuracy": next(scores)}

    best, _ = loop.evaluate_checkpoints(model, model_dir, eval_fn, "eval_accuracy", model_dir, delete_non_best=True)
    assert best == 4
    assert [s for s, _ in loop.list_checkpoints(model_dir)] == [4, 6]
    state = tf.train.get_checkpoint_state(model_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["model.ckpt-4", "model.ckpt-6"]
    assert tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "model.ckpt-6")


# --- strict configs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["num_hidden_layers", "num_attention_heads", "hidden_act", "type_vocab_size"])
def test_a_config_without_an_architecture_key_is_refused(tmp_path, key):
    path = tmp_path / "albert_config.json"
    values = AlbertConfig(**TINY).to_dict()
    assert set(REQUIRED_KEYS) <= set(values)
    del values[key]
    path.write_text(json.dumps(values))
    with pytest.raises(InputError) as caught:
        AlbertConfig.from_json_file(str(path))
    message = str(caught.value)
    assert f"`{path}` lacks the key(s) {key}," in message
    assert "64" not in message   # no default the user never wrote


def test_a_config_dict_without_an_architecture_key_names_the_default_it_takes(caplog):
    """`AlbertConfig.from_dict` keeps the original's defaults (a Python dict, as `BertConfig.from_dict`), but says
    which keys it filled: the tiny model's later "`num_attention_heads=64`" has its origin named."""
    values = AlbertConfig(**TINY).to_dict()
    del values["num_attention_heads"], values["num_hidden_groups"]
    config = AlbertConfig.from_dict(values)
    assert config.num_attention_heads == 64
    warning = [r.getMessage() for r in caplog.records if "lacks" in r.getMessage()]
    assert len(warning) == 1
    assert "lacks num_hidden_groups, num_attention_heads," in warning[0]
    assert "num_attention_heads=64" in warning[0]
    caplog.clear()
    AlbertConfig.from_dict(AlbertConfig(**TINY).to_dict())
    assert "lacks" not in caplog.text


# --- damaged TFRecords named --------------------------------------------------------------------------------

def _records(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(5):
            writer.write(b"x" * 100)
    data = _read(path)
    cut, flipped = str(tmp_path / "cut.tfrecord"), str(tmp_path / "flipped.tfrecord")
    with open(cut, "wb") as f:
        f.write(data[:-30])
    damaged = bytearray(data)
    damaged[130] ^= 1   # inside the second record's data: its checksum no longer matches
    with open(flipped, "wb") as f:
        f.write(bytes(damaged))
    return path, cut, flipped


def test_a_graph_mode_data_loss_keeps_its_cause_and_the_file_is_named(tmp_path):
    path, cut, flipped = _records(tmp_path)

    @tf.function
    def count(dataset):
        return dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)

    for damaged, expected in ((cut, "truncated record at 464"), (flipped, "corrupted record at 128")):
        with pytest.raises(tf.errors.DataLossError) as caught:
            count(tf.data.TFRecordDataset(damaged))
        assert str(caught.value).startswith("Graph execution error")
        assert one_line(caught.value).startswith(expected)
        assert driver.damaged_record_file([path, damaged]) == (damaged, one_line(caught.value))
    assert driver.damaged_record_file([path]) is None


# --- albert-reproduce reuses only what it would compute again -----------------------------------------------

def test_reproduce_refuses_a_directory_of_a_run_with_other_arguments(tmp_path):
    from albert_tf import reproduce   # pylint: disable=import-outside-toplevel
    glue = tmp_path / "glue"
    glue.mkdir()
    out = tmp_path / "out"
    runtime = dict(strategy="one_device", use_tpu=False, tpu_name=None, mixed_precision=None, jit_compile=False,
                   random_seed=None)
    arguments = reproduce.task_arguments("rte", "release", "base_v2")
    stored = reproduce.run_identity("albert_base_v2", "base_v2", arguments, runtime, str(glue))
    (out / "rte").mkdir(parents=True)
    (out / "rte" / reproduce.TASK_RUN_FILE).write_text(json.dumps(stored))
    (out / "rte" / reproduce.TASK_RESULT_FILE).write_text(json.dumps(
        {"rows": [["Accuracy", 70.0]], "best_step": 2, "arguments": arguments}))
    # Other weights and the paper's recipe: refused before anything runs, naming the differences.
    with pytest.raises(InputError) as caught:
        reproduce.reproduce(str(out), "albert_large_v2", tasks=["rte"], recipe="paper", glue_dir=str(glue))
    message = str(caught.value)
    assert f"`{out / 'rte'}` holds a run with other arguments" in message
    assert "init_checkpoint 'albert_base_v2' there, 'albert_large_v2' now" in message
    assert not (out / reproduce.RESULTS_FILE).exists()
    # The same arguments: the stored results are read back.
    results = reproduce.reproduce(str(out), "albert_base_v2", tasks=["rte"], glue_dir=str(glue),
                                  strategy="one_device")
    assert results["rte"]["rows"] == [("Accuracy", 70.0)]
    # Results without their arguments (an older version) are not reused.
    os.remove(out / "rte" / reproduce.TASK_RUN_FILE)
    with pytest.raises(InputError, match="holds results without the arguments"):
        reproduce.reproduce(str(out), "albert_base_v2", tasks=["rte"], glue_dir=str(glue), strategy="one_device")


# --- exports that cannot collide ----------------------------------------------------------------------------

def test_an_export_whose_version_was_taken_meanwhile_goes_to_the_next_free_one(tmp_path):
    from albert_tf.export import saved_model   # pylint: disable=import-outside-toplevel
    export_dir = tmp_path / "export"
    (export_dir / "1").mkdir(parents=True)
    (export_dir / "1" / "saved_model.pb").write_bytes(b"the other export")
    for name in ("a", "b"):
        (export_dir / f".tmp-{name}").mkdir()
        (export_dir / f".tmp-{name}" / "saved_model.pb").write_bytes(name.encode())
    # The version was not given: the next free one, the other export left as it is.
    written = saved_model._rename_to_free_version(str(export_dir / ".tmp-a"), str(export_dir / "1"), True)
    assert written == str(export_dir / "2")
    assert (export_dir / "2" / "saved_model.pb").read_bytes() == b"a"
    assert (export_dir / "1" / "saved_model.pb").read_bytes() == b"the other export"
    # A version the user gave: one line.
    with pytest.raises(InputError, match=r"`.*/export/2` was written by another export meanwhile"):
        saved_model._rename_to_free_version(str(export_dir / ".tmp-b"), str(export_dir / "2"), False)
    assert (export_dir / "2" / "saved_model.pb").read_bytes() == b"a"


def test_the_quickstart_holds_its_output_dir(tmp_path):
    from albert_tf.quickstart.run import run_quickstart   # pylint: disable=import-outside-toplevel
    out = str(tmp_path / "quick")
    child = _hold_in_child(out)
    try:
        with pytest.raises(InputError, match=f"is in use by another run: process {child.pid}"):
            run_quickstart(output_dir=out, overwrite=True)
    finally:
        child.kill()
        child.wait()
    assert os.listdir(out) == [fileio.LOCK_FILE]   # the other run's lock: nothing of this run, nothing removed


def test_the_data_writer_holds_its_output_files(tmp_path):
    from albert_tf.tasks.pretraining.writer import create_data   # pylint: disable=import-outside-toplevel
    out = str(tmp_path / "data")
    held = os.path.join(out, "train.tfrecord")
    os.makedirs(out)
    child = subprocess.Popen([sys.executable, "-c", _HOLDER.replace(
        "fileio.output_lock(sys.argv[1])", "fileio.output_file_locks([sys.argv[1]])"), held],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=REPO))
    assert child.stdout.readline().strip() == "held"
    try:
        run = create_data.CreateDataOptions(input_file=str(tmp_path / "corpus.txt"),
                                            output_file=f"{out}/other.tfrecord,{held}")
        with pytest.raises(InputError, match=f"is in use by another run: process {child.pid}"):
            create_data.create_pretraining_data(run, create_data.PretrainingDataOptions())
        # Another file of the same directory is free.
        with fileio.output_file_locks([os.path.join(out, "other.tfrecord")]):
            pass
    finally:
        child.kill()
        child.wait()
