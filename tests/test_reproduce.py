"""`albert-reproduce`: the recipes are the original release's values, `results.md` puts each dev score beside the
published one, and a run over every task on tiny fixtures (two steps each) writes every row and resumes."""

import os
import subprocess
import sys

import pytest
import sentencepiece as spm

from albert_tf import reproduce
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from reproduce_runs import ROOT, _release_dir, reproduce_every_task
import task_fixtures as tfx


# Transcribed from the original run_glue.sh (run_task TASK WARMUP LR STEPS SAVE_STEPS BSZ) and README commands.
RUN_GLUE_SH = {"cola": (320, 1e-5, 5336, 100, 16), "sts-b": (214, 2e-5, 3598, 100, 16),
               "sst-2": (1256, 1e-5, 20935, 100, 32), "mnli": (1000, 3e-5, 10000, 100, 128),
               "qnli": (1986, 1e-5, 33112, 200, 32), "qqp": (1000, 5e-5, 14000, 100, 128),
               "rte": (200, 3e-5, 800, 100, 32), "mrpc": (200, 2e-5, 800, 100, 32)}


def test_recipes_are_run_glue_sh_and_the_readme_commands():
    for task, (warmup, lr, steps, save, batch) in RUN_GLUE_SH.items():
        args = reproduce.task_arguments(task)
        assert (args["warmup_step"], args["learning_rate"], args["train_step"], args["save_checkpoints_steps"],
                args["train_batch_size"], args["max_seq_length"], args["optimizer"]) == (
                    warmup, lr, steps, save, batch, 512, "adamw"), task
    squad = reproduce.task_arguments("squad2.0")
    assert {k: squad[k] for k in ("max_seq_length", "doc_stride", "max_query_length", "train_batch_size",
                                  "learning_rate", "num_train_epochs", "warmup_proportion", "n_best_size",
                                  "max_answer_length", "version_2_with_negative")} == dict(
        max_seq_length=384, doc_stride=128, max_query_length=64, train_batch_size=48, learning_rate=5e-5,
        num_train_epochs=2.0, warmup_proportion=0.1, n_best_size=20, max_answer_length=30,
        version_2_with_negative=True)
    assert reproduce.task_arguments("squad1.1")["version_2_with_negative"] is False
    paper = reproduce.task_arguments("squad2.0", recipe="paper")
    assert (paper["learning_rate"], paper["max_seq_length"], paper["num_train_epochs"]) == (3e-5, 512, 3.0)
    race = reproduce.task_arguments("race")
    assert (race["max_seq_length"], race["max_qa_length"], race["train_batch_size"], race["learning_rate"],
            race["train_step"], race["warmup_step"]) == (512, 128, 32, 1e-5, 12000, 1000)
    assert reproduce.task_arguments("race", recipe="paper", model_name="base_v1")["learning_rate"] == 2e-5
    assert reproduce.task_arguments("race", recipe="paper", model_name="base_v2")["learning_rate"] == 1e-5
    # Overrides: every task, then one task; keys a runner does not take are dropped.
    args = reproduce.task_arguments("rte", overrides={"*": {"train_step": 2, "max_qa_length": 9},
                                                      "rte": {"learning_rate": 1.0}})
    assert args["train_step"] == 2 and args["learning_rate"] == 1.0 and "max_qa_length" not in args
    with pytest.raises(InputError, match="recipe"):
        reproduce.task_arguments("rte", recipe="mine")


def test_published_table_and_model_names():
    # The README's results table (dev; SQuAD F1/EM), transcribed.
    assert reproduce.published("base_v2", "mnli") == 84.6 and reproduce.published("base_v2", "race") == 66.8
    assert (reproduce.published("large_v1", "squad2.0", 0), reproduce.published("large_v1", "squad2.0", 1)) == (
        82.3, 79.4)
    assert reproduce.published("xxlarge_v1", "rte") == 89.2 and reproduce.published("base_v2", "rte") is None
    assert reproduce.model_name_of("albert_base_v2") == "base_v2"
    assert reproduce.model_name_of("/x/albert_xxlarge_v1.tar.gz") == "xxlarge_v1"
    assert reproduce.model_name_of("/x/albert_xlarge_v2/") == "xlarge_v2"
    assert reproduce.model_name_of("/x/model.ckpt-1000") is None


def test_results_table_has_the_difference():
    results = {"mnli": {"rows": [("Accuracy", 85.0)], "best_step": 9000, "arguments": {"learning_rate": 3e-5}},
               "squad1.1": {"rows": [("F1", 90.0), ("EM", 83.0)], "best_step": 3000, "arguments": {}},
               "rte": {"rows": [("Accuracy", 70.0)], "best_step": 800, "arguments": {}}}
    text = reproduce.format_results(results, "base_v2", "release", "albert_base_v2", "one_device")
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")[:5])
            for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    assert ("MNLI-m", "Accuracy", "85.00", "84.6", "+0.40") in rows
    assert ("SQuAD 1.1", "F1", "90.00", "90.2", "-0.20") in rows
    assert ("SQuAD 1.1", "EM", "83.00", "83.2", "-0.20") in rows
    assert ("RTE", "Accuracy", "70.00", "—", "—") in rows


def test_bad_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="No task to run"):
        reproduce.reproduce(str(tmp_path / "out"), "albert_base_v2")
    with pytest.raises(InputError, match="No data directory for squad"):
        reproduce.reproduce(str(tmp_path / "out"), "albert_base_v2", glue_dir=str(tmp_path), tasks=["squad1.1"])
    with pytest.raises(InputError, match="Unknown task"):
        reproduce.reproduce(str(tmp_path / "out"), "albert_base_v2", glue_dir=str(tmp_path), tasks=["wnli"])
    with pytest.raises(InputError, match="model_name"):
        reproduce.reproduce(str(tmp_path / "out"), "x", glue_dir=str(tmp_path), model_name="huge_v3")
    assert not (tmp_path / "out").exists()


@pytest.mark.e2e
def test_every_task_on_tiny_fixtures_writes_results_md_and_resumes(tmp_path):
    reproduce_every_task(tmp_path)


@pytest.mark.e2e
def test_a_refused_attempt_records_nothing_and_the_corrected_command_is_not_refused_for_it(tmp_path):
    """The recipe's length 512 on a model of 32 positions is refused before training: no `reproduce_run.json`
    stays, so the next command with other weights is judged on its own (here refused for the same length)."""
    glue = tfx.write_glue(str(tmp_path / "glue"))
    spm_file = tfx.train_spm(str(tmp_path))
    config = AlbertConfig(vocab_size=spm.SentencePieceProcessor(model_file=spm_file).get_piece_size(), **tfx.TINY)
    release = _release_dir(str(tmp_path), config, spm_file)
    other = str(tmp_path / "other")
    os.rename(release, other)
    release = _release_dir(str(tmp_path), config, spm_file)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "out"
    for weights in (release, other):
        proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-reproduce", f"--output_dir={out}",
                               f"--init_checkpoint={weights}", f"--glue_dir={glue}", "--tasks=rte"],
                              capture_output=True, text=True, env=env, timeout=600)
        line = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 2 and "Cannot use sequence length 512" in line, proc.stderr[-3000:]
        assert not (out / "rte" / reproduce.TASK_RUN_FILE).exists()
