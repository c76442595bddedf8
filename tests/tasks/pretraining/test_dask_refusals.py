"""The Beam writer's refusals on a Dask cluster that cannot run it (issue 67): a scheduler without workers is
named after a bounded wait, an address where nothing listens in one line within the connection timeout, and a
mistyped `--runner` in one line listing the runners, DaskRunner among them."""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("apache_beam", reason="apache_beam is not installed (the `albert_tf[beam]` extra)")
pytest.importorskip("distributed", reason="dask.distributed is not installed (the `beam` extra)")

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from albert_tf.errors import InputError  # noqa: E402
from albert_tf.tasks.pretraining.writer import beam as beam_writer  # noqa: E402

import task_fixtures  # noqa: E402

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[3]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_without_workers_is_named_after_a_bounded_wait(tmp_path, monkeypatch):
    scheduler_file = tmp_path / "scheduler.json"
    dask = [str(BIN / "dask")] if (BIN / "dask").exists() else [sys.executable, "-m", "dask"]
    with open(tmp_path / "scheduler.log", "wb") as log:
        scheduler = subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                             "--scheduler-file", str(scheduler_file)], stdout=log,
                                     stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.time() + 60
        while not scheduler_file.exists() and time.time() < deadline and scheduler.poll() is None:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        monkeypatch.setattr(beam_writer, "DASK_WORKER_WAIT_S", 2.0)
        options = PipelineOptions(beam_writer.runner_args(["--runner=DaskRunner", f"--dask_client_address={address}"]))
        start = time.time()
        with pytest.raises(InputError) as e:
            beam_writer.check_dask_cluster(options)
        assert time.time() - start < 30
        message = str(e.value)
        assert "\n" not in message and f"The Dask scheduler at {address} has no worker after 2 s" in message, message
        assert f"dask worker {address}" in message, message
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=30)


def _command(tmp_path, *args):
    spm = task_fixtures.train_spm(str(tmp_path))
    (tmp_path / "corpus.txt").write_text("One sentence here.\nAnother one there.\n\nA second document.\n")
    return subprocess.run(
        [str(BIN / "albert-create-pretraining-data"), f"--input_file={tmp_path / 'corpus.txt'}",
         f"--output_file={tmp_path / 'out' / 'train'}", f"--spm_model_file={spm}",
         f"--vocab_file={spm[:-len('.model')]}.vocab", "--max_seq_length=16", *args],
        capture_output=True, text=True, timeout=150, cwd=tmp_path,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2",
             "HOME": str(tmp_path)})


def _error_lines(result):
    return [line for line in result.stderr.splitlines()
            if line.startswith("albert-create-pretraining-data: error:") or "Traceback" in line]


@pytest.mark.e2e
def test_nothing_listening_and_a_mistyped_runner_are_one_line(tmp_path):
    start = time.time()
    result = _command(tmp_path, "--runner=DaskRunner", f"--dask_client_address=tcp://127.0.0.1:{_free_port()}",
                      "--dask_connection_timeout=2")
    assert result.returncode == 2, result.stderr[-3000:]
    lines = _error_lines(result)
    assert len(lines) == 1 and "Cannot reach the Dask scheduler at tcp://127.0.0.1:" in lines[0], result.stderr[-3000:]
    assert time.time() - start < 60
    result = _command(tmp_path, "--runner=DaskRuner")
    assert result.returncode == 2, result.stderr[-3000:]
    lines = _error_lines(result)
    assert len(lines) == 1 and "`--runner=DaskRuner` is not a Beam runner" in lines[0], result.stderr[-3000:]
    assert "DaskRunner" in lines[0].split("not a Beam runner", 1)[1] and "DirectRunner" in lines[0], lines
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
