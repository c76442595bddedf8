"""The Beam pretraining data writer on a real Dask cluster (`--runner=DaskRunner`).

Each test starts `dask scheduler` and two `dask worker` processes (one thread each, no nanny) on loopback, on
random ports, and runs `albert-create-pretraining-data` through them on the quickstart's Python documentation
corpus: the multiset of examples and the statistics equal the local writer's for the same seed and sharding,
both workers make shards (their logs name each shard), and a worker killed mid-run either leaves the run to
the other worker (the same examples) or fails it with one line and nothing under the final names. The
`dask` commands of docs/pretraining.md run here as written (only the port differs). The cluster is stopped
in a `finally`.
"""

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("apache_beam", reason="apache_beam is not installed (the `albert_tf[beam]` extra)")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (the `beam` extra "
                                  "installs it with apache-beam[dask])")

from albert_tf.tasks.pretraining.writer import local as pretraining_writer  # noqa: E402

import test_beam_writer as beam_tests  # noqa: E402  (the corpus, the local writer's run, the readers)
import test_docs  # noqa: E402  (the blocks of docs/pretraining.md)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHARD_LINE = re.compile(r"Shard (\d+): \d+ documents, \d+ instances")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(170)]  # commands in subprocesses; a cluster each


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return beam_tests.make_corpus(tmp_path_factory.mktemp("dask"))


@pytest.fixture(scope="module")
def local(corpus):
    return beam_tests.run_local(corpus)


def _environment():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _dask(*args):
    """The venv's `dask` console script, or the same command through `python -m` where there is none."""
    script = BIN / "dask"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "dask", *args]


class Cluster:
    """`dask scheduler` and `workers` `dask worker` processes on loopback; `stop()` ends every one."""

    def __init__(self, directory, workers=2):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.scheduler_file = self.directory / "scheduler.json"
        self.processes, self.logs = [], []
        self._start("scheduler", _dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                       "--scheduler-file", str(self.scheduler_file)))
        deadline = time.time() + 60
        while not self.scheduler_file.exists():
            self._check(deadline)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        for i in range(workers):
            self._start(f"worker{i}", _dask(
                "worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1", "--nthreads", "1",
                "--no-nanny", "--no-dashboard", "--name", f"worker{i}", "--local-directory",
                str(self.directory / f"worker{i}"), "--preload", str(ROOT / "tests" / "dask_worker_logging.py")))
        with distributed.Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=90)

    def _start(self, name, command):
        log = self.directory / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                                   env=_environment(), cwd=self.directory))

    def _check(self, deadline):
        for process, log in zip(self.processes, self.logs):
            if process.poll() is not None:
                raise RuntimeError(f"{log.name} exited {process.returncode}: {log.read_text()[-2000:]}")
        if time.time() > deadline:
            raise TimeoutError("the Dask scheduler did not start in 60 s")
        time.sleep(0.2)

    def shards(self, worker):
        """The shard indices that worker `worker` logged as made."""
        return [int(k) for k in SHARD_LINE.findall(self.logs[1 + worker].read_text(errors="replace"))]

    def kill(self, worker):
        self.processes[1 + worker].send_signal(signal.SIGKILL)
        self.processes[1 + worker].wait()

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _command(corpus, out, address, dupe_factor=None):
    options = beam_tests.OPTIONS
    return [str(BIN / "albert-create-pretraining-data"), "--runner=DaskRunner", f"--dask_client_address={address}",
            f"--input_file={corpus['pattern']}", f"--output_file={out / 'train'}",
            f"--spm_model_file={corpus['model']}", f"--vocab_file={corpus['vocab']}",
            f"--max_seq_length={options.max_seq_length}",
            f"--max_predictions_per_seq={options.max_predictions_per_seq}",
            f"--dupe_factor={dupe_factor or options.dupe_factor}", f"--random_seed={options.random_seed}",
            f"--shard_size_mb={beam_tests.SHARD_MB}"]


def _shard_count(corpus):
    files = sorted(str(p) for p in Path(corpus["root"]).glob("part-*.txt"))
    return sum(1 for _ in pretraining_writer.iter_shards(files, int(beam_tests.SHARD_MB * 1e6)))


def _check_same_as_local(out, local):
    local_stats, local_records = local
    assert beam_tests._records(beam_tests._outputs(out, "train")) == local_records
    summary = json.loads((out / "train-summary.json").read_text())
    for name in ("instances", "documents", "tokens", "masked", "sop_positive", "short_target_instances"):
        assert summary[name] == getattr(local_stats, name), name
    assert tuple(summary["ngram_draws"]) == local_stats.ngram_draws


def test_two_workers_write_the_local_writers_examples(corpus, local, tmp_path):
    cluster = Cluster(tmp_path / "cluster")
    try:
        out = tmp_path / "out"
        result = subprocess.run(_command(corpus, out, cluster.address), capture_output=True, text=True,
                                env=_environment(), timeout=150)
        assert result.returncode == 0, result.stderr[-3000:]
        # The command logs the original's statistics; they are the local writer's.
        assert f"Summary: {local[0].summary()}" in result.stderr
        _check_same_as_local(out, local)
        made = [cluster.shards(0), cluster.shards(1)]
    finally:
        cluster.stop()
    assert made[0] and made[1], f"a worker made no shard: {made}"
    assert sorted(set(made[0] + made[1])) == list(range(_shard_count(corpus)))
    assert sorted(os.listdir(out)) == [f"train-{i:05d}-of-{_shard_count(corpus):05d}"
                                       for i in range(_shard_count(corpus))] + ["train-summary.json"]


def test_a_killed_worker_leaves_the_run_to_the_other(corpus, tmp_path):
    """One worker is killed (SIGKILL) once it has made a shard: the run ends through the other worker with the
    local writer's examples, or fails with one line and no file under the final names."""
    dupe_factor = 4  # longer shards, so the worker dies with work left
    expected_dir = tmp_path / "local"
    expected_dir.mkdir()
    options = dataclasses.replace(beam_tests.OPTIONS, dupe_factor=dupe_factor)
    stats = pretraining_writer.write_pretraining_examples(
        corpus["pattern"], [str(expected_dir / "train-0")], spm_model_file=corpus["model"], options=options,
        shard_size_mb=beam_tests.SHARD_MB)
    expected = (stats, beam_tests._records([str(expected_dir / "train-0")]))
    cluster = Cluster(tmp_path / "cluster")
    out = tmp_path / "out"
    try:
        run = subprocess.Popen(_command(corpus, out, cluster.address, dupe_factor), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_environment())
        deadline = time.time() + 120
        victim = None
        while victim is None and run.poll() is None and time.time() < deadline:
            victim = next((w for w in (0, 1) if cluster.shards(w)), None)
            time.sleep(0.05)
        assert victim is not None, "no worker made a shard before the run ended"
        cluster.kill(victim)
        _, stderr = run.communicate(timeout=150)
        survivor_made = cluster.shards(1 - victim)
    finally:
        if run.poll() is None:
            run.kill()
        cluster.stop()
    if run.returncode == 0:
        _check_same_as_local(out, expected)
        assert survivor_made, "the surviving worker made no shard"
    else:
        last = stderr.strip().splitlines()[-1]
        assert last.startswith("albert-create-pretraining-data: error:"), stderr[-3000:]
        assert not [f for f in os.listdir(out) if f.startswith("train")] if out.exists() else True


DOC_PORT = "8786"


def _dask_block():
    blocks = [b for b in test_docs.parse_blocks(ROOT / "docs" / "pretraining.md") if "--runner=DaskRunner" in b.code]
    assert len(blocks) == 1, "docs/pretraining.md has one block with the Dask cluster"
    assert "tests/test_dask_writer.py" in blocks[0].not_tested
    return blocks[0]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def test_the_docs_dask_commands_run_as_written(corpus, local, tmp_path):
    """The Dask block of docs/pretraining.md, in a directory with `corpus/*.txt`, `30k-clean.model` and
    `30k-clean.vocab`; its port 8786 is replaced by a free one."""
    block = _dask_block()
    work = tmp_path / "work"
    (work / "corpus").mkdir(parents=True)
    for path in Path(corpus["root"]).glob("part-*.txt"):
        (work / "corpus" / path.name).write_bytes(path.read_bytes())
    (work / "30k-clean.model").write_bytes(Path(corpus["model"]).read_bytes())
    (work / "30k-clean.vocab").write_bytes(Path(corpus["vocab"]).read_bytes())
    options = beam_tests.OPTIONS
    small = [f"--max_seq_length={options.max_seq_length}",
             f"--max_predictions_per_seq={options.max_predictions_per_seq}", f"--dupe_factor={options.dupe_factor}", f"--random_seed={options.random_seed}",
             f"--shard_size_mb={beam_tests.SHARD_MB}"]  # the local run's options, so the examples compare
    code = block.code.replace(DOC_PORT, _free_port()).replace(
        "albert-create-pretraining-data ", f"albert-create-pretraining-data {' '.join(small)} ", 1)
    (work / "block.sh").write_text(code, encoding="utf-8")
    result = subprocess.run(["bash", "-euo", "pipefail", "block.sh"], cwd=work, env=_environment(),
                            capture_output=True, text=True, timeout=150, start_new_session=True)
    assert result.returncode == 0, f"{block.name}:\n{code}\n--- output ---\n{(result.stdout + result.stderr)[-4000:]}"
    _check_same_as_local(work / "data", local)
