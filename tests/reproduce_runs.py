"""`albert-reproduce` over every task on tiny fixtures (two steps each), as a user runs it: every row of
`results.md`, the resume, the refusals of other arguments (tests/test_reproduce.py on TensorFlow,
tests/test_jax_reproduce.py under JAX)."""

import os
import re
import shutil
import subprocess
import sys

from albert_tf import reproduce
from albert_tf.checkpoints.writer import save_tf1_checkpoint
from albert_tf.models.albert_model import AlbertModel
import task_fixtures as tfx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --- end to end on tiny fixtures ------------------------------------------------------------------------------

TINY_OVERRIDES = {
    "*": dict(max_seq_length=tfx.SQUAD_SEQ, train_step=2, warmup_step=1, train_batch_size=4, eval_batch_size=4,
              predict_batch_size=4, save_checkpoints_steps=1, max_qa_length=6, doc_stride=8, max_query_length=8,
              n_best_size=3, start_n_top=2, end_n_top=2),
    # SQuAD's steps come from its epochs: int(10 examples / 4 * 0.8) = 2 (v1), int(15 / 4 * 0.6) = 2 (v2).
    "squad1.1": dict(num_train_epochs=0.8),
    "squad2.0": dict(num_train_epochs=0.6),
}


def _release_dir(root, config, spm_model):
    """A release directory as Google's tarballs unpack (`albert_base_v2/`: config, SentencePiece model, weights)."""
    release = os.path.join(root, "albert_base_v2")
    os.makedirs(release)
    config.to_json_file(os.path.join(release, "albert_config.json"))
    shutil.copy(spm_model, os.path.join(release, "30k-clean.model"))
    save_tf1_checkpoint(AlbertModel(config), os.path.join(release, "model.ckpt-best"))
    return release


def reproduce_every_task(tmp_path):
    """Runs every task on the tiny fixtures under `tmp_path` and checks `results.md`, the resume and the refusals."""
    data = tfx.write_all(tmp_path / "data")
    release = _release_dir(str(tmp_path), data["config"], data["spm"])
    out = tmp_path / "out"
    results = reproduce.reproduce(str(out), release, glue_dir=data["glue"], squad_dir=data["squad"],
                                  race_dir=data["race"], overrides=TINY_OVERRIDES)
    assert list(results) == list(reproduce.tasks())
    text = (out / reproduce.RESULTS_FILE).read_text()
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    names = ["CoLA", "STS-B", "SST-2", "MNLI-m", "QNLI", "QQP", "RTE", "MRPC", "SQuAD 1.1", "SQuAD 1.1",
             "SQuAD 2.0", "SQuAD 2.0", "RACE"]
    assert [row[0] for row in rows] == names
    published = {"MNLI-m": "84.6", "SST-2": "92.9", "RACE": "66.8"}
    for row in rows:
        name, metric, dev, pub, diff = row[:5]
        value = float(dev)
        if name == "SQuAD 2.0":
            pub_expected = {"F1": "82.1", "EM": "79.3"}[metric]
        elif name == "SQuAD 1.1":
            pub_expected = {"F1": "90.2", "EM": "83.2"}[metric]
        else:
            pub_expected = published.get(name, "—")
        assert pub == pub_expected, row
        if pub != "—":
            assert diff == f"{value - float(pub):+.2f}", row
        assert (-100.0 <= value <= 100.0) if metric in ("MCC", "Pearson") else (0.0 <= value <= 100.0), row
        assert row[5] in ("1", "2"), row      # two steps, a checkpoint after each: the better one
    assert "published scores of: base_v2" in text and "run_glue.sh" in text
    # Each task trained its two steps.
    for task in reproduce.tasks():
        assert os.path.exists(out / task / reproduce.TASK_RESULT_FILE)
        assert os.path.exists(out / task / "model.ckpt-best.index") or task.startswith("squad")
    # Resumable: the finished tasks are read back, not run again (no new file anywhere), with the same arguments.
    before = {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
              for d, _, files in os.walk(out / "mnli") for f in files}
    again = reproduce.reproduce(str(out), release, glue_dir=data["glue"], squad_dir=data["squad"],
                                race_dir=data["race"], overrides=TINY_OVERRIDES)
    assert again == results and (out / reproduce.RESULTS_FILE).read_text() == text
    after = {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
             for d, _, files in os.walk(out / "mnli") for f in files}
    assert after == before
    # The command without the tiny overrides: other arguments, refused in one line naming the difference.
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = ("import sys; from albert_tf import commands; sys.argv = ['albert-reproduce'] + sys.argv[1:]; "
            "commands.run('albert-reproduce')")
    proc = subprocess.run([sys.executable, "-c", code, f"--output_dir={out}", f"--init_checkpoint={release}",
                           f"--glue_dir={data['glue']}", f"--squad_dir={data['squad']}", f"--race_dir={data['race']}"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2 and "holds a run with other arguments" in proc.stderr.splitlines()[-1], proc.stderr
    assert (out / reproduce.RESULTS_FILE).read_text() == text
    proc = subprocess.run([sys.executable, "-c", code, f"--output_dir={out}"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 2 and re.fullmatch(r"albert-reproduce: error: `--init_checkpoint` is required\.\n",
                                                 proc.stderr.splitlines(True)[-1]), proc.stderr
