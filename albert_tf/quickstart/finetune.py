"""The quickstart's fine-tuning and serving steps: the GLUE runner on the `stdlib` task, then the export answered
from a fresh process the way TF Serving runs it.

* `finetune(...)`: `run_classifier(task_name="stdlib", do_train, do_eval, do_predict)` from initial weights
  (the quickstart's pretrained checkpoint, any `from_pretrained` source or name, or none: random
  initialisation), optionally with `export_dir`; returns the dev accuracy of `model.ckpt-best` (the runner's
  choice among the checkpoints, by dev accuracy), the test accuracy of its predictions (scored against
  `test_labels.tsv`, which the runner never reads), and the dev accuracy of every checkpoint.
* `serve(export_path, sentences)`: a child process imports `tensorflow_text` (the `serve_text` signature's
  SentencePiece ops), loads the SavedModel with `albert_tf.export.session_model.SessionModel`
  (`tf.compat.v1.saved_model.loader.load` into a session: TF Serving's loader path) and runs `serve_text` by its
  SignatureDef tensor names.
"""

import json
import os
import subprocess
import sys

from albert_tf.quickstart import task as quickstart_task
from albert_tf.tasks.glue import data as glue
from albert_tf.training import loop
from albert_tf.tasks.glue.task import run_classifier

LABELS = glue.StdlibProcessor.LABELS


def eval_history(output_dir):
    """`[(global_step, eval_accuracy), ...]` from the runner's `eval_results.txt` (one block per checkpoint)."""
    path = os.path.join(output_dir, loop.EVAL_RESULTS_FILE)
    history, current = [], {}
    if not os.path.exists(path):
        return history
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.strip().partition(" = ")
            if key in ("global_step", "eval_accuracy"):
                current[key] = float(value)
            elif line.startswith("=" * 10):
                if "global_step" in current and "eval_accuracy" in current:
                    history.append((int(current["global_step"]), current["eval_accuracy"]))
                current = {}
    return history


def test_accuracy(output_dir, task_dir):
    """The accuracy of the runner's `submit_results.tsv` against `test_labels.tsv`."""
    answers = quickstart_task.read_test_labels(task_dir)
    with open(os.path.join(output_dir, "submit_results.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    right = sum(answers.get(index) == label for index, label in rows)
    return right / max(len(answers), 1)


def finetune(data_dir, output_dir, albert_config_file, spm_model_file, init_checkpoint=None, export_dir=None,
             max_seq_length=64, train_batch_size=32, learning_rate=5e-4, train_step=300, warmup_step=30,
             save_checkpoints_steps=100, iterations_per_loop=20, jit_compile=False, random_seed=12345):
    """One fine-tuning run of the quickstart task through `run_classifier`; returns its results.

    Returns:
        dict: `dev_accuracy` (of `model.ckpt-best`), `best_step`, `test_accuracy`, `dev_history`
        (`[(step, dev accuracy), ...]`), `output_dir`, `init` and, with `export_dir`, `export_path`.
    """
    result = run_classifier(
        task_name=quickstart_task.TASK_NAME, data_dir=data_dir, output_dir=output_dir,
        albert_config_file=albert_config_file, spm_model_file=spm_model_file, init_checkpoint=init_checkpoint,
        do_lower_case=True, max_seq_length=max_seq_length, do_train=True, do_eval=True, do_predict=True,
        train_batch_size=train_batch_size, eval_batch_size=64, predict_batch_size=64,
        learning_rate=learning_rate, train_step=train_step, warmup_step=warmup_step,
        save_checkpoints_steps=save_checkpoints_steps, iterations_per_loop=iterations_per_loop,
        optimizer="adamw", export_dir=export_dir, jit_compile=jit_compile, random_seed=random_seed)
    task_dir = os.path.join(data_dir, quickstart_task.TASK_DIR)
    summary = {"dev_accuracy": float(result["eval"]["eval_accuracy"]), "best_step": int(result["eval"]["best_step"]),
               "test_accuracy": test_accuracy(output_dir, task_dir), "dev_history": eval_history(output_dir),
               "output_dir": output_dir, "init": init_checkpoint}
    if export_dir:
        summary["export_path"] = result["export_path"]
    return summary


_SERVE_SCRIPT = r"""
import json, sys
import tensorflow_text  # noqa: F401  (the SentencePiece ops of serve_text, as a model server built with them)
from albert_tf.export.session_model import SessionModel
export_path, sentences = sys.argv[1], json.loads(sys.argv[2])
with SessionModel(export_path) as model:
    out = model.run("serve_text", text_a=sentences, text_b=[""] * len(sentences))
print(json.dumps({"predictions": out["predictions"].tolist(), "probabilities": out["probabilities"].tolist(),
                  "signatures": sorted(model.signature_defs)}))
"""


def serve(export_path, sentences, timeout=600):
    """The export's answers to `sentences` from a fresh process (`SessionModel`, `serve_text`).

    Returns:
        list of `{"sentence", "label", "score"}`, and the export's signature names.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", _SERVE_SCRIPT, export_path, json.dumps(list(sentences))],
                          capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"Serving the exported SavedModel from a fresh process failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    answers = []
    for sentence, prediction, probabilities in zip(sentences, out["predictions"], out["probabilities"]):
        answers.append({"sentence": sentence, "label": LABELS[int(prediction)],
                        "score": float(probabilities[int(prediction)])})
    return answers, out["signatures"]
