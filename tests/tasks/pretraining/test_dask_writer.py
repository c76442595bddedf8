"""The Beam pretraining data writer on a real Dask cluster (`--runner=DaskRunner`).

Each test starts `dask scheduler` and two `dask worker` processes (one thread each) on loopback, on random
ports, and runs `albert-create-pretraining-data` through them on the quickstart's Python documentation corpus.
The `dask` block of docs/pretraining.md runs as written (its port replaced by a free one, the test's small
options added): the multiset of examples and the statistics equal the local writer's for the same seed and
sharding, and both workers make shards (the workers' log lines name each shard, tests/dask_worker_logging.py).
A worker killed mid-run (SIGKILL, no nanny to restart it) either leaves the run to the other worker (the same
examples) or fails it with one line and nothing under the final names. The clusters are stopped in a `finally`.
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

import beam_fixtures as beam_tests  # noqa: E402  (the corpus, the local writer's run, the readers)
import doc_blocks  # noqa: E402  (the blocks of docs/pretraining.md)

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
SHARD_LINE = re.compile(r"\[worker (\S+)\] Shard (\d+): \d+ documents, \d+ instances")
PRELOAD = ROOT / "tests" / "dask_worker_logging.py"

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(170)]  # commands in subprocesses; a cluster each


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return beam_tests.make_corpus(tmp_path_factory.mktemp("dask"))


@pytest.fixture(scope="module")
def local(corpus):
    return beam_tests.run_local(corpus)


def _environment():
    # The preload through Dask's configuration, so that the docs' `dask worker` lines run as written.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", DASK_DISTRIBUTED__WORKER__PRELOAD=f'["{PRELOAD}"]')
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
                str(self.directory / f"worker{i}")))

    def _start(self, name, command):
        log = self.directory / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                                   env=_environment(), cwd=self.directory))

    def _check(self, deadline, sleep=0.2):
        for process, log in zip(self.processes, self.logs):
            if process.poll() is not None and process.returncode != -signal.SIGKILL:
                raise RuntimeError(f"{log.name} exited {process.returncode}: {log.read_text()[-2000:]}")
        if time.time() > deadline:
            raise TimeoutError("the Dask scheduler did not start in 60 s")
        time.sleep(sleep)

    def shards(self, worker):
        """The shard indices that worker `worker` logged as made."""
        self._check(float("inf"), sleep=0)
        return sum(_shards_by_worker(self.logs[1 + worker].read_text(errors="replace")).values(), [])

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


def _shards_by_worker(log):
    """{worker address: [shard index, ...]} from the workers' `Shard K:` lines in `log`."""
    made = {}
    for address, k in SHARD_LINE.findall(log):
        made.setdefault(address, []).append(int(k))
    return made


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


def test_a_killed_worker_leaves_the_run_to_the_other(corpus, tmp_path):
    """One worker is killed (SIGKILL) once it has made a shard: the run ends through the other worker with the
    local writer's examples, or fails with one line and no file under the final names."""
    dupe_factor = 4  # longer shards, so the worker dies with work left
    cluster = Cluster(tmp_path / "cluster")  # its workers start while the local writer runs
    run, log = None, tmp_path / "command.log"
    out = tmp_path / "out"
    try:
        expected_dir = tmp_path / "local"
        expected_dir.mkdir()
        options = dataclasses.replace(beam_tests.OPTIONS, dupe_factor=dupe_factor)
        stats = pretraining_writer.write_pretraining_examples(
            corpus["pattern"], [str(expected_dir / "train-0")], spm_model_file=corpus["model"], options=options,
            shard_size_mb=beam_tests.SHARD_MB)
        expected = (stats, beam_tests._records([str(expected_dir / "train-0")]))
        with open(log, "wb") as stderr:
            run = subprocess.Popen(_command(corpus, out, cluster.address, dupe_factor), stdout=subprocess.DEVNULL,
                                   stderr=stderr, env=_environment())
        deadline = time.time() + 120
        victim = None
        while victim is None and run.poll() is None and time.time() < deadline:
            victim = next((w for w in (0, 1) if cluster.shards(w)), None)
            time.sleep(0.05)
        assert victim is not None, "no worker made a shard before the run ended"
        cluster.kill(victim)
        run.wait(timeout=150)
        survivor_made = cluster.shards(1 - victim)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        cluster.stop()
    if run.returncode == 0:
        _check_same_as_local(out, expected)
        assert survivor_made, "the surviving worker made no shard"
    else:
        text = log.read_text(errors="replace")
        assert text.strip().splitlines()[-1].startswith("albert-create-pretraining-data: error:"), text[-3000:]
        assert not (out.exists() and [f for f in os.listdir(out) if f.startswith("train")]), os.listdir(out)


DOC_PORT = "8786"


def _dask_block():
    blocks = [b for b in doc_blocks.parse_blocks(ROOT / "docs" / "pretraining.md") if "--runner=DaskRunner" in b.code]
    assert len(blocks) == 1, "docs/pretraining.md has one block with the Dask cluster"
    assert "tests/tasks/pretraining/test_dask_writer.py" in blocks[0].not_tested
    return blocks[0]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def test_the_docs_dask_cluster_writes_the_local_writers_examples(corpus, local, tmp_path):
    """The Dask block of docs/pretraining.md (a scheduler, two workers, the command), in a directory with
    `corpus/*.txt`, `30k-clean.model` and `30k-clean.vocab`; its port 8786 is replaced by a free one and the
    local run's options are added to the command."""
    block = _dask_block()
    work = tmp_path / "work"
    (work / "corpus").mkdir(parents=True)
    for path in Path(corpus["root"]).glob("part-*.txt"):
        (work / "corpus" / path.name).write_bytes(path.read_bytes())
    (work / "30k-clean.model").write_bytes(Path(corpus["model"]).read_bytes())
    (work / "30k-clean.vocab").write_bytes(Path(corpus["vocab"]).read_bytes())
    options = beam_tests.OPTIONS
    small = [f"--max_seq_length={options.max_seq_length}",
             f"--max_predictions_per_seq={options.max_predictions_per_seq}", f"--dupe_factor={options.dupe_factor}",
             f"--random_seed={options.random_seed}", f"--shard_size_mb={beam_tests.SHARD_MB}"]
    code = block.code.replace(DOC_PORT, _free_port()).replace(
        "albert-create-pretraining-data ", f"albert-create-pretraining-data {' '.join(small)} ", 1)
    (work / "block.sh").write_text(code, encoding="utf-8")
    # A session of its own: the block's `trap` stops its cluster; a test that times out kills the group.
    process = subprocess.Popen(["bash", "-euo", "pipefail", "block.sh"], cwd=work, env=_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, f"{block.name}:\n{code}\n--- output ---\n{output[-4000:]}"
    # The command logs the original's statistics; they are the local writer's, and so are the examples.
    assert f"Summary: {local[0].summary()}" in output
    _check_same_as_local(work / "data", local)
    n = _shard_count(corpus)
    assert sorted(os.listdir(work / "data")) == [f"train-{i:05d}-of-{n:05d}" for i in range(n)] + ["train-summary.json"]
    made = _shards_by_worker(output)
    assert len(made) == 2, f"shards by worker: {made}"
    assert sorted(set(sum(made.values(), []))) == list(range(n))
