"""`benchmarks/device_check.py --tiny --backends=jax`: the JAX rows of the device check (the jax loop's
pretraining and fine-tuning steps, `jax.jit` over `stateless_call` for inference) run on the CPU and print their
rows in the one table. CI's backends tier runs this module (tests/**/test_jax_*.py); without jax it is skipped."""

import os
import re
import subprocess
import sys

import pytest

import repo_paths

pytest.importorskip("jax")

ROOT = repo_paths.REPO


@pytest.mark.e2e
def test_tiny_jax_rows(tmp_path):
    output = tmp_path / "table.md"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "device_check.py"), "--tiny",
                           "--backends=jax", f"--output={output}"], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = output.read_text()
    assert text in proc.stdout
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("pretraining", "albert_tf JAX loop", "tiny, seq 16, batch 8"),
        ("fine-tuning", "albert_tf JAX loop", "tiny, seq 16, batch 8"),
        ("inference", "albert_tf JAX", "tiny, seq 16, batch 8"),
        ("inference", "albert_tf JAX", "tiny, seq 16, batch 32")]
    for row in rows:
        rate = re.fullmatch(r"([\d,.]+) (seq/s|steps/s)", row[3])
        assert rate and float(rate.group(1).replace(",", "")) > 0, row
        assert float(row[4]) > 0 and float(row[5]) > 0 and re.fullmatch(r"[\d.]+%", row[6]), row
        assert row[7] == "n/a", row        # JAX's CPU client keeps no memory statistics
    assert re.search(r"Device: CPU; policy mixed_bfloat16, XLA; TensorFlow [\d.]+, Keras [\d.]+, JAX [\d.]+; "
                     r"peak [\d.e+-]+ TFLOP/s \(measured bfloat16 matmul\)", text)
