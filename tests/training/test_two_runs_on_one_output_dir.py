"""Two real processes on one output (issue 56's "Done when"): two `run_classifier` runs with different learning
rates on one `--output_dir`, and two `albert-export` runs into one `--export_dir` at once.

The overlap is made certain without hooks in the library: the first process is stopped (SIGSTOP) at a point where
it provably holds what the second one wants (its lock file, its temporary export directory), the second runs to
its end, then the first is continued (SIGCONT) and runs to its end."""

import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import fileio
from albert_tf.training import loop
from glue_fixtures import REPO, glue_root, model_files  # noqa: F401  (fixtures)

pytestmark = pytest.mark.e2e

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", PYTHONPATH=REPO)


def _wait_for(path, proc, timeout=300):
    """Waits until `path` exists while `proc` runs."""
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"exited with {proc.returncode} before {path} appeared:\n"
                                 f"{proc.communicate()[0][-3000:]}")
        assert time.time() < deadline, f"{path} did not appear in {timeout} s"
        time.sleep(0.05)


def _snapshot(directory):
    """{relative path: (size, mtime_ns, content)} of every file below `directory`."""
    files = {}
    for parent, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(parent, name)
            stat = os.stat(path)
            with open(path, "rb") as f:
                files[os.path.relpath(path, directory)] = (stat.st_size, stat.st_mtime_ns, f.read())
    return files


def _classifier(glue, model, out_dir, learning_rate):
    return [sys.executable, "-m", "albert_tf.run_classifier", "--task_name=SST-2", f"--data_dir={glue}",
            f"--output_dir={out_dir}", f"--albert_config_file={model['config_file']}",
            f"--spm_model_file={model['spm']}", "--max_seq_length=32", "--train_batch_size=4", "--train_step=6",
            "--warmup_step=1", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
            f"--learning_rate={learning_rate}", "--do_train", "--do_eval"]


@pytest.fixture(scope="module")
def two_runs(glue_root, model_files, tmp_path_factory):  # noqa: F811
    """The first run stopped once its first checkpoint is written (it holds the lock), the second run started on
    the same directory with another learning rate and run to its end, then the first continued to its end."""
    out_dir = str(tmp_path_factory.mktemp("two_runs") / "out")
    first = subprocess.Popen(_classifier(glue_root, model_files, out_dir, 1e-4), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=ENV)
    try:
        _wait_for(os.path.join(out_dir, "model.ckpt-2.index"), first)
        first.send_signal(signal.SIGSTOP)
        held = _snapshot(out_dir)
        second = subprocess.run(_classifier(glue_root, model_files, out_dir, 3e-4), capture_output=True, text=True,
                                env=ENV, timeout=300)
        after_second = _snapshot(out_dir)
    finally:
        first.send_signal(signal.SIGCONT)
    first_out = first.communicate(timeout=300)[0]
    return {"out_dir": out_dir, "first": first, "first_out": first_out, "second": second, "held": held,
            "after_second": after_second}


def test_a_second_run_on_one_output_dir_is_refused_and_the_first_keeps_its_own(two_runs):
    out_dir, first, second = two_runs["out_dir"], two_runs["first"], two_runs["second"]
    # The second: one line naming the directory and the holder, a non-zero exit, no traceback.
    assert second.returncode != 0
    assert "Traceback" not in second.stderr + second.stdout
    errors = [line for line in second.stderr.splitlines() if line.startswith("run_classifier.py: error:")]
    assert len(errors) == 1, second.stderr[-3000:]
    assert errors[0] == second.stderr.strip().splitlines()[-1]
    assert (f"run_classifier.py: error: `{out_dir}` is in use by another run: process {first.pid} on "
            f"{socket.gethostname()}") in errors[0]
    assert "learning_rate=0.0003" not in errors[0]
    # The second wrote nothing and changed nothing: the directory is as the stopped first run left it.
    assert two_runs["after_second"] == two_runs["held"]
    assert fileio.LOCK_FILE in two_runs["held"]
    # The first ran to its end on its own checkpoints: trained to step 6 at its learning rate, every checkpoint
    # evaluated, the best kept, the lock released.
    assert first.returncode == 0, two_runs["first_out"][-3000:]
    assert "learning_rate = 0.0001" in two_runs["first_out"]
    assert "learning_rate = 0.0003" not in two_runs["first_out"]
    names = os.listdir(out_dir)
    assert fileio.LOCK_FILE not in names
    with open(os.path.join(out_dir, "eval_results.txt")) as f:
        results = f.read()
    with open(os.path.join(out_dir, "best_trial.txt")) as f:
        best = f.read()
    assert "global_step" in results and "eval_accuracy" in results
    last_step, best_step, _ = best.split(":")
    assert last_step == "6" and int(best_step) in (2, 4, 6)
    assert [line for line in results.splitlines() if line.startswith("global_step")] == \
        ["global_step = 2", "global_step = 4", "global_step = 6"]
    reader = tf.train.load_checkpoint(os.path.join(out_dir, "model.ckpt-best"))
    assert reader.get_tensor("optimizer/iteration/.ATTRIBUTES/VARIABLE_VALUE") == int(best_step)
    # The best and the latest kept; the state file names them, and nothing that is not on disk.
    kept = sorted({int(best_step), 6})
    assert [s for s, _ in loop.list_checkpoints(out_dir)] == kept
    state = tf.train.get_checkpoint_state(out_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [f"model.ckpt-{s}" for s in kept]
    assert state.model_checkpoint_path.endswith("model.ckpt-6")
    assert not [name for name in names if "tmp" in name]


def _export(source, model_files, export_dir):  # noqa: F811
    return subprocess.Popen(
        [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={source}", "--model=classifier",
         f"--albert_config_file={model_files['config_file']}", f"--spm_model_file={model_files['spm']}",
         f"--export_dir={export_dir}", "--max_seq_length=32", "--noserve_text", "--nowarmup"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def test_two_exports_into_one_directory_at_once_both_land(two_runs, model_files, tmp_path):  # noqa: F811
    source = os.path.join(two_runs["out_dir"], "model.ckpt-best")
    export_dir = str(tmp_path / "export")
    # Both choose version 1: the first is stopped while it writes its temporary directory, the second starts
    # and writes its own, then the first goes on; the two renames to version 1 race.
    first = _export(source, model_files, export_dir)
    second = None
    try:
        _wait_for(os.path.join(export_dir, f".tmp-1-{first.pid}"), first)
        first.send_signal(signal.SIGSTOP)
        second = _export(source, model_files, export_dir)
        _wait_for(os.path.join(export_dir, f".tmp-1-{second.pid}"), second)
    finally:
        first.send_signal(signal.SIGCONT)
    outs = [proc.communicate(timeout=300) for proc in (first, second)]
    for proc, (stdout, stderr) in zip((first, second), outs):
        assert proc.returncode == 0, stderr[-3000:]
        assert "Traceback" not in stderr and "AlreadyExists" not in stderr
    written = sorted(stdout.strip().splitlines()[-1] for stdout, _ in outs)
    assert written == [os.path.join(export_dir, "1"), os.path.join(export_dir, "2")]
    moved = [stderr for _, stderr in outs if "was written by another export meanwhile" in stderr]
    assert len(moved) == 1
    assert f"{os.path.join(export_dir, '1')} was written by another export meanwhile: exporting to " \
           f"{os.path.join(export_dir, '2')}." in moved[0]
    assert sorted(os.listdir(export_dir)) == ["1", "2"]   # no temporary directory left
    ids = np.array([[2, 10, 11, 3] + [0] * 28], np.int32)
    mask = (ids > 0).astype(np.int32)
    probabilities = []
    for version in written:
        serve = tf.saved_model.load(version).signatures["serving_default"]
        outputs = serve(input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                        segment_ids=tf.zeros_like(ids))
        probabilities.append(outputs["probabilities"].numpy())
    np.testing.assert_array_equal(probabilities[0], probabilities[1])   # the same checkpoint in both
