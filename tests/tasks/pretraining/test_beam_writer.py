"""Tests of the Apache Beam pretraining data pipeline (`albert_tf.tasks.pretraining.writer.beam`).

On DirectRunner, in memory and with 4 worker processes, on the Python documentation corpus of the quickstart:
the multiset of serialized examples equals the local writer's for the same seed and sharding; the statistics
of the original's algorithm hold; bad inputs fail with a message naming the file and leave nothing under the
final names. Runner names map to Beam's classes (the DirectRunner to the FnApiRunner it falls back to, without
the PrismRunner's download), and a DirectRunner run reaches nothing beyond loopback.
"""

import json
import os
import random
import subprocess
import sys

import pytest

apache_beam = pytest.importorskip(
    "apache_beam", reason="apache_beam is not installed (the optional `pip install albert_tf[beam]` extra)")

from albert_tf.tasks.pretraining.writer import beam as pretraining_beam
from albert_tf.tasks.pretraining.writer import local as pretraining_writer  # noqa: E402
from albert_tf.text.vocab import train_sentencepiece  # noqa: E402

import pretraining_fixtures  # noqa: E402  (the statistics check shared with the local writer)
from beam_fixtures import OPTIONS, SHARD_MB, _outputs, _records, make_corpus, run_local

IN_MEMORY = ["--runner=DirectRunner", "--direct_num_workers=1"]
MULTI_PROCESS = ["--runner=DirectRunner", "--direct_num_workers=4", "--direct_running_mode=multi_processing"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("beam"))


@pytest.fixture(scope="module")
def local(corpus):
    return run_local(corpus)


def _run_beam(corpus, out, pipeline_args, prefixes=("train",), **kwargs):
    out.mkdir()
    stats = pretraining_beam.run_pipeline(
        corpus["pattern"], ",".join(str(out / p) for p in prefixes), spm_model_file=corpus["model"],
        vocab_file=corpus["vocab"], options=OPTIONS, shard_size_mb=SHARD_MB, pipeline_args=pipeline_args, **kwargs)
    return stats, _records([p for prefix in prefixes for p in _outputs(out, prefix)])


def test_in_memory_runner_writes_the_local_writers_examples(corpus, local, tmp_path):
    local_stats, local_records = local
    stats, records = _run_beam(corpus, tmp_path / "out", IN_MEMORY, prefixes=("train", "more"), num_output_shards=3)
    assert records == local_records
    assert stats == local_stats
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == [f"{p}-0000{i}-of-00003" for p in ("more", "train") for i in range(3)] + ["train-summary.json"]
    summary = json.loads((tmp_path / "out" / "train-summary.json").read_text())
    assert summary["instances"] == local_stats.instances and summary["documents"] == local_stats.documents
    assert summary["masked_fraction"] == local_stats.masked_fraction
    assert summary["sop_positive_fraction"] == local_stats.sop_positive_fraction
    assert summary["tokens"] == local_stats.tokens


def test_four_worker_processes_write_the_same_examples(corpus, local, tmp_path):
    _, local_records = local
    stats, records = _run_beam(corpus, tmp_path / "out", MULTI_PROCESS)
    assert records == local_records
    assert stats.instances == sum(local_records.values())


def test_shards_are_the_local_writers_shards(tmp_path):
    rng = random.Random(3)
    files = []
    for i in range(3):
        lines = []
        for _ in range(rng.randint(20, 60)):
            lines += [" ".join(rng.choice("ab cd ef gh") for _ in range(rng.randint(1, 30)))
                      for _ in range(rng.randint(1, 5))]
            lines.append(rng.choice(["", "  ", "\t", " \r"]))  # blank lines, some only whitespace
        path = tmp_path / f"f{i}.txt"
        text = "\n".join(lines[:-1]) + ("\n" if i != 1 else "")  # f1 ends without "\n"
        path.write_bytes(text.encode())
        files.append(str(path))
    for shard_bytes in (1000, 1500, 3000, 10 ** 6):
        expected = [lines for lines, _ in pretraining_writer.iter_shards(files, shard_bytes)]
        plan = pretraining_beam.plan_shards(files, [os.path.getsize(f) for f in files],
                                            [pretraining_beam.blank_line_offsets(f) for f in files], shard_bytes)
        assert [pretraining_beam.read_shard_lines(ranges) for ranges in plan] == expected
        assert len(expected) > 1 or shard_bytes == 10 ** 6


def test_statistics_hold_on_beam(tmp_path):
    def write(path, out, spm_model, options):
        directory = tmp_path / "beam-out"
        directory.mkdir()
        stats = pretraining_beam.run_pipeline(path, str(directory / "stats"), spm_model_file=spm_model,
                                              options=options, shard_size_mb=SHARD_MB, pipeline_args=IN_MEMORY)
        return stats, _outputs(directory, "stats")

    pretraining_fixtures.check_statistics(tmp_path, write)


def _no_outputs(directory):
    return os.listdir(directory) if os.path.isdir(directory) else []


def test_bad_inputs_fail_naming_the_file(corpus, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run = dict(spm_model_file=corpus["model"], options=OPTIONS, shard_size_mb=SHARD_MB, pipeline_args=IN_MEMORY)

    with pytest.raises(ValueError, match="nope-"):
        pretraining_beam.run_pipeline(f"{corpus['files'][0]},{tmp_path}/nope-*.txt", str(out / "a"), **run)

    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n")
    with pytest.raises(Exception, match="empty.*empty.txt"):
        pretraining_beam.run_pipeline(str(empty), str(out / "e"), **run)
    assert _no_outputs(out) == []

    long_document = tmp_path / "long.txt"
    long_document.write_text("a line of a very long document.\n" * 10000)  # 320 kB, no blank line
    with pytest.raises(Exception, match="long.txt.*shard"):
        pretraining_beam.run_pipeline(str(long_document), str(out / "l"), **run)
    assert _no_outputs(out) == []

    other = train_sentencepiece(corpus["files"][1:2], str(tmp_path / "other"), vocab_size=1500, minloglevel=2)
    with pytest.raises(ValueError, match="other.vocab.*does not match.*spm.model"):
        pretraining_beam.run_pipeline(corpus["files"][0], str(out / "v"), vocab_file=other[:-len("model")] + "vocab",
                                      **run)

    # A file that exists but cannot be read as a file fails the pipeline with its name.
    unreadable = tmp_path / "unreadable.txt"
    unreadable.mkdir()
    with pytest.raises(Exception, match="unreadable.txt"):
        pretraining_beam.run_pipeline(str(unreadable), str(out / "u"), **run)
    assert _no_outputs(out) == []


def test_runner_names_map_to_beams_runners():
    from apache_beam.runners.dask.dask_runner import DaskRunner
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.runners.runner import create_runner

    def runner(args):
        return create_runner(next(a for a in args if a.startswith("--runner=")).split("=", 1)[1])

    # No runner, or the DirectRunner: Beam's FnApiRunner, which the DirectRunner falls back to after Prism.
    assert type(runner(pretraining_beam.runner_args([]))) is FnApiRunner
    direct = pretraining_beam.runner_args(["--runner=DirectRunner", "--direct_num_workers=4"])
    assert type(runner(direct)) is FnApiRunner and direct[1:] == ["--direct_num_workers=4"]
    args = pretraining_beam.runner_args(["--runner=DaskRunner", "--dask_client_address=tcp://127.0.0.1:8786"])
    assert type(runner(args)) is DaskRunner and "--dask_partition_size=1" in args
    partitioned = pretraining_beam.runner_args(["--runner=DaskRunner", "--dask_npartitions=3"])
    assert "--dask_partition_size=1" not in partitioned
    assert pretraining_beam.runner_args(["--runner=DataflowRunner", "--project=p"]) == [
        "--runner=DataflowRunner", "--project=p"]


# Runs `run_pipeline` with the runner argv[1] on the corpus argv[2:] under an audit hook that refuses every
# connection and name lookup beyond loopback (so nothing is downloaded even where the network is open) and
# records it; prints the records as the last line. Beam's INFO lines go to stderr.
_NO_NETWORK = r"""
import ipaddress, json, logging, sys, urllib.parse

refused = []


def _local(host):
    if host is None or host == "localhost" or isinstance(host, bytes) and host == b"localhost":
        return True
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
    except ValueError:
        return False


def _hook(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    elif event == "socket.getaddrinfo":
        host = args[0]
    elif event == "urllib.Request":
        host = urllib.parse.urlparse(args[0]).hostname
    else:
        return
    if not _local(host):
        refused.append(f"{event} {host}")
        raise OSError(f"refused by the test: {event} {host}")


sys.addaudithook(_hook)
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from albert_tf.tasks.pretraining.writer import beam
from albert_tf.tasks.pretraining.writer.instances import PretrainingDataOptions

runner, pattern, model, out = sys.argv[1:]
beam.run_pipeline(pattern, out, spm_model_file=model, shard_size_mb=0.2, pipeline_args=[f"--runner={runner}"],
                  options=PretrainingDataOptions(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1))
print(json.dumps(refused))
"""


def _run_without_network(corpus, runner, out):
    result = subprocess.run([sys.executable, "-c", _NO_NETWORK, runner, corpus["files"][0], corpus["model"], str(out)],
                            capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


@pytest.mark.e2e
def test_direct_runner_reaches_no_network(corpus, tmp_path):
    refused, log = _run_without_network(corpus, "DirectRunner", tmp_path / "train")
    assert refused == [], f"the DirectRunner run reached beyond loopback: {refused}"
    assert "prism" not in log.lower(), log[-3000:]
    assert "Summary:" in log
    # The check sees what it looks for: Beam's own DirectRunner class (not mapped) tries Prism's download,
    # which the hook refuses, and then falls back.
    refused, log = _run_without_network(
        corpus, "apache_beam.runners.direct.direct_runner.DirectRunner", tmp_path / "control")
    assert any("github.com" in r for r in refused), refused
    assert "Downloading prism" in log or "prism" in log.lower()


@pytest.mark.e2e
def test_command_line_with_a_runner(corpus, local, tmp_path):
    _, local_records = local
    out = tmp_path / "cli"
    out.mkdir()
    args = [sys.executable, "-m", "albert_tf.commands", "create_pretraining_data",
            f"--input_file={corpus['pattern']}",
            f"--output_file={out / 'train'}", f"--spm_model_file={corpus['model']}",
            f"--vocab_file={corpus['vocab']}", f"--max_seq_length={OPTIONS.max_seq_length}",
            f"--max_predictions_per_seq={OPTIONS.max_predictions_per_seq}", f"--dupe_factor={OPTIONS.dupe_factor}",
            f"--random_seed={OPTIONS.random_seed}", f"--shard_size_mb={SHARD_MB}",
            "--runner=DirectRunner", "--direct_num_workers=1", "--num_output_shards=2"]
    result = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Summary:" in result.stderr
    assert _records(_outputs(out, "train")) == local_records
    assert sorted(os.listdir(out)) == ["train-00000-of-00002", "train-00001-of-00002", "train-summary.json"]
    # Beam options without --runner are an error, not silently ignored.
    result = subprocess.run(args[:-3] + ["--direct_num_workers=1"], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode != 0 and "--runner" in result.stderr
