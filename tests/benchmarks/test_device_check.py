"""`benchmarks/device_check.py --tiny`: the device check runs on the CPU and prints its one table."""

import os
import re
import subprocess
import sys

import pytest

import repo_paths

ROOT = repo_paths.REPO
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import device_check  # noqa: E402  (benchmarks/ is not a package)


def test_flop_counts_written_out():
    # albert-base, seq 128: the encoder forward by hand (2 FLOPs per multiply-add).
    t, e, h, i = 128, 128, 768, 3072
    layer = 2 * t * h * 3 * h + 2 * t * t * h + 2 * t * t * h + 2 * t * h * h + 2 * t * h * i + 2 * t * i * h
    assert device_check.encoder_flops("base", 128) == 2 * t * e * h + 12 * layer + 2 * h * h
    mlm = 20 * (2 * h * e + 2 * e * 30000)
    assert device_check.pretraining_flops("base", 128, 20) == 3 * (device_check.encoder_flops("base", 128) + mlm
                                                                   + 2 * h * 2)
    # BERT-base's forward at seq 128 is about 22 GFLOP per sequence; ALBERT-base does the same matmuls.
    assert 20e9 < device_check.encoder_flops("base", 128) < 24e9


def test_datasheet_peaks_by_whole_model_name():
    assert device_check.datasheet_peak("NVIDIA A100-SXM4-80GB", "bfloat16") == (312.0, "A100")
    assert device_check.datasheet_peak("NVIDIA H100 PCIe", "float16") == (756.0, "H100 PCIe")
    assert device_check.datasheet_peak("NVIDIA H100 80GB HBM3", "bfloat16") == (989.0, "H100")
    assert device_check.datasheet_peak("NVIDIA L40", "bfloat16") == (181.0, "L40")
    # Unknown parts, and float32 (no tensor-core figure): measured instead.
    assert device_check.datasheet_peak("NVIDIA A10G", "bfloat16") == (None, None)
    assert device_check.datasheet_peak("NVIDIA A100-SXM4-80GB", "float32") == (None, None)
    assert device_check.datasheet_peak("CPU", "bfloat16") == (None, None)


@pytest.mark.e2e
def test_tiny_run_prints_every_row(tmp_path):
    output = tmp_path / "table.md"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    # The TensorFlow rows (tests/benchmarks/test_jax_device_check.py runs the JAX ones where jax is installed).
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "device_check.py"), "--tiny",
                           "--backends=tensorflow", f"--output={output}"], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = output.read_text()
    assert text in proc.stdout
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("pretraining", "albert_tf loop", "tiny, seq 16, batch 8"),
        ("pretraining", "albert_tf loop", "tiny, seq 32, batch 4"),
        ("fine-tuning", "albert_tf loop", "tiny, seq 16, batch 8"),
        ("fine-tuning", "keras-hub step", "tiny, seq 16, batch 8"),
        ("inference", "albert_tf", "tiny, seq 16, batch 8"),
        ("inference", "albert_tf", "tiny, seq 16, batch 32"),
        ("inference", "keras-hub AlbertBackbone", "tiny, seq 16, batch 8"),
        ("inference", "keras-hub AlbertBackbone", "tiny, seq 16, batch 32")]
    for row in rows:
        rate = re.fullmatch(r"([\d,.]+) (seq/s|steps/s)", row[3])
        assert rate and float(rate.group(1).replace(",", "")) > 0, row
        assert float(row[4]) > 0 and float(row[5]) > 0 and re.fullmatch(r"[\d.]+%", row[6]), row
    assert re.search(r"Device: CPU; policy mixed_bfloat16, XLA; .* peak [\d.e+-]+ TFLOP/s \(measured bfloat16 "
                     r"matmul\)", text)
    assert "1,786 sentences/s at batch 8, seq 128" in text and "485.6 sequences/s at seq 128" in text


def test_jax_rows_say_not_run_without_jax(monkeypatch):
    # A TensorFlow-only install: the JAX rows are in the table, each saying why no number, and nothing is started.
    monkeypatch.setattr(device_check.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(device_check.subprocess, "run", lambda *args, **kwargs: pytest.fail("a process started"))
    entries = device_check.jax_plan(tiny=True)
    rows = [device_check.run_jax_entry(index, tiny=True) for index in range(len(entries))]
    assert [[batch for batch, _ in entry_rows] for entry_rows in rows] == [[8], [8], [8, 32]]
    lines = [device_check.format_row(entry, batch, row, 1.0) for entry, entry_rows in zip(entries, rows)
             for batch, row in entry_rows]
    assert lines[0] == ("| pretraining | albert_tf JAX loop | tiny, seq 16, batch 8 | not run: jax is not installed "
                        "| | | | |")
    assert all("not run: jax is not installed" in line for line in lines)
