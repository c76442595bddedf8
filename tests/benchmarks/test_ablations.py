"""benchmarks/ablations.py end to end on a tiny setting: two configurations (Table 3's E = H all-shared SOP run,
which is also Table 5's SOP row, and Table 5's NSP row), a few steps, a small corpus and vocabulary, sequence 32;
checks the markdown tables, results.json and the PNG plots it writes, and the one-line error of a bad flag."""

import json
import os
import re
import subprocess
import sys

from albert_tf.quickstart.corpus import write_corpus
import repo_paths

ROOT = repo_paths.REPO
SCRIPT = os.path.join(ROOT, "benchmarks", "ablations.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _small_corpus(tmp_path, num_documents=24):
    """The first documents of the embedded corpus's training split, as a `--corpus` file."""
    train_txt, _, _ = write_corpus(str(tmp_path))
    with open(train_txt, encoding="utf-8") as f:
        documents = [d for d in re.split(r"\n\s*\n", f.read()) if d.strip()][:num_documents]
    path = tmp_path / "small_corpus.txt"
    path.write_text("".join(d.strip("\n") + "\n\n" for d in documents), encoding="utf-8")
    return str(path)


def _run(args, timeout=600):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=ROOT)


def test_tiny_run_writes_tables_results_and_plots(tmp_path):
    out = tmp_path / "out"
    names = ["E32_shared_sop_s7", "E32_shared_nsp_s7"]
    proc = _run([f"--corpus={_small_corpus(tmp_path)}", f"--output_dir={out}", "--tables=3,5", "--seeds=7",
                 "--embedding_sizes=16", "--embedding_size=32", "--hidden_size=32", "--layers=2",
                 "--num_attention_heads=2", "--steps=4", "--batch_size=8", "--max_seq_length=32",
                 "--max_predictions_per_seq=5", "--vocab_size=300", "--dupe_factor=1", "--num_workers=1",
                 "--nojit_compile", f"--configs={','.join(names)}"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "config 2/2 E32_shared_nsp_s7" in proc.stdout and "ETA" in proc.stdout

    results = json.loads((out / "results.json").read_text())
    assert sorted(results["configurations"]) == sorted(names)
    for row in results["configurations"].values():
        assert row["parameters"] > 0 and row["step_s"] > 0
        for key in ("mlm_accuracy", "sop_accuracy", "nsp_accuracy"):
            assert 0.0 <= row[key] <= 1.0
    assert [e["loss"] for e in results["tables"]["5"]] == ["nsp", "sop"]
    assert [r["name"] for r in results["tables"]["3"]] == ["E32_shared_sop_s7"]

    report = (out / "ablations.md").read_text()
    assert "## Table 3: factorized embeddings (E)" in report and "## Table 5: sentence-level loss" in report
    assert "Table 4" not in report
    table3 = report.split("## Table 3")[1].split("## Table 5")[0]
    assert re.search(r"^\| all-shared \| 32 \| [\d,]+ \| [\d.]+ \|.*`E32_shared_sop_s7` \|$", table3, re.M)
    table5 = report.split("## Table 5")[1]
    assert re.search(r"^\| NSP \| 7 \| [\d,]+ \| [\d.]+ ± 0\.0 \|", table5, re.M)
    assert re.search(r"^\| SOP \| 7 \|", table5, re.M)
    assert not re.search(r"^\| None \|", table5, re.M)
    for table in (3, 5):
        assert f"(table{table}.png)" in report
        assert (out / f"table{table}.png").read_bytes()[:8] == PNG_MAGIC
    assert not (out / "table4.png").exists()


def test_unknown_configuration_is_one_line_error(tmp_path):
    proc = _run([f"--output_dir={tmp_path}", "--tables=4", "--configs=E99_shared_sop_s1"], timeout=300)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if "E99_shared_sop_s1" in line]
    assert len(lines) == 1 and "E64_notshared_sop_s1" in lines[0], proc.stderr[-2000:]
