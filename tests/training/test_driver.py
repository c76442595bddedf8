"""The task driver: the worked example of docs/adding_a_task.md runs as written, and the task contract stays small."""

import importlib.util
import json
import os
import random
import re
import subprocess
import sys

import pytest
import sentencepiece as spm
from absl import flags

from albert_tf import commands
from albert_tf.checkpoints.restore import check_readable
from albert_tf.commands import flags as flag_lib
from albert_tf.config import AlbertConfig
from albert_tf.options import RuntimeOptions
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.training import driver
import original_checkpoints as oc
import repo_paths

REPO = repo_paths.REPO
POSITIVE = ("good", "great", "nice", "happy")
NEGATIVE = ("bad", "awful", "poor", "sad")
FILLER = ("the", "movie", "was", "very", "a", "plot", "and", "really", "story", "film")


def _sentences(seed, n):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.random() < 0.5
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 7))]
        words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if label else NEGATIVE))
        rows.append((int(label), " ".join(words)))
    return rows


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The docs' module, the TSV files it reads, a SentencePiece model and a config of the same vocabulary."""
    root = tmp_path_factory.mktemp("driver")
    text = open(os.path.join(REPO, "docs", "adding_a_task.md"), encoding="utf-8").read()
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    module_path = root / "sentiment_task.py"
    module_path.write_text(code)
    spec = importlib.util.spec_from_file_location("sentiment_task", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    data = root / "data"
    data.mkdir()
    for split, seed, n in (("train", 1, 160), ("dev", 2, 40), ("test", 3, 10)):
        (data / f"{split}.tsv").write_text("".join(f"{label}\t{sentence}\n" for label, sentence in
                                                   _sentences(seed, n)))
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(sentence for _, sentence in _sentences(4, 300)) + "\n")
    spm_model = train_sentencepiece(str(corpus), str(root / "spm"), vocab_size=60, hard_vocab_limit=False,
                                    character_coverage=1.0, minloglevel=2)
    config = AlbertConfig(vocab_size=spm.SentencePieceProcessor(model_file=spm_model).get_piece_size(),
                          embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    config_file = str(root / "albert_config.json")
    config.to_json_file(config_file)
    return {"module": module, "data": str(data), "spm": spm_model, "config": config, "config_file": config_file}


def _run(example, output_dir, **kwargs):
    values = dict(albert_config_file=example["config_file"], spm_model_file=example["spm"], max_seq_length=16,
                  train_step=80, warmup_step=8, save_checkpoints_steps=40, learning_rate=2e-3, train_batch_size=16,
                  eval_batch_size=32, do_train=True, do_eval=True, do_predict=True)
    values.update(kwargs)
    data_dir = values.pop("data_dir", example["data"])
    return example["module"].run_sentiment(data_dir, str(output_dir), **values)


@pytest.mark.e2e
def test_the_documented_task_trains_evaluates_and_predicts(example, tmp_path):
    out = tmp_path / "out"
    result = _run(example, out, random_seed=3)
    assert result["train"]["global_step"] == 80 and result["train"]["num_train_steps"] == 80
    assert result["eval"]["eval_accuracy"] >= 0.7, result   # chance: 0.5 (0.775-0.95 across CPUs and kernels)
    assert result["eval"]["best_step"] in (40, 80)
    names = set(os.listdir(out))
    assert {"eval_results.txt", "best_trial.txt", "model.ckpt-best.index", "predictions.tsv"} <= names
    assert not [name for name in names if ".tmp" in name]
    lines = (out / "predictions.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == [str(i) for i in range(10)]
    truth = [label for label, _ in _sentences(3, 10)]
    assert sum(int(line.split("\t")[1]) == label for line, label in zip(lines, truth)) >= 8

    # The same weights as a checkpoint of the original TF1 code: the same predictions.
    model = AlbertClassifier(example["config"], num_labels=2)
    driver.restore_for_inference(model, str(out), None)
    original = tmp_path / "original"
    oc.save_original_checkpoint(model, str(original / "model.ckpt-best"))
    _run(example, original, do_train=False, do_eval=False)
    assert (original / "predictions.tsv").read_text() == (out / "predictions.tsv").read_text()


MIRRORED_RUN = """
import importlib.util, json, sys
import tensorflow as tf
from absl import logging
logging.set_verbosity(logging.INFO)
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
spec = importlib.util.spec_from_file_location("sentiment_task", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
values = json.loads(sys.argv[2])
result = module.run_sentiment(values.pop("data_dir"), values.pop("output_dir"), **values)
print("RESULT " + json.dumps({"step": result["train"]["global_step"], "accuracy": result["eval"]["eval_accuracy"]}))
"""


@pytest.mark.e2e
def test_the_documented_task_runs_under_mirrored_strategy_on_two_cpus(example, tmp_path):
    """The example as written, in a process with 2 logical CPUs and `strategy="mirrored"`: the driver's loop
    and the inference step split each batch over the 2 replicas; it trains, evaluates and predicts."""
    script = tmp_path / "mirrored_run.py"
    script.write_text(MIRRORED_RUN)
    out = tmp_path / "out"
    values = dict(data_dir=example["data"], output_dir=str(out), albert_config_file=example["config_file"],
                  spm_model_file=example["spm"], max_seq_length=16, train_step=80, warmup_step=8,
                  save_checkpoints_steps=40, learning_rate=2e-3, train_batch_size=16, eval_batch_size=32,
                  do_train=True, do_eval=True, do_predict=True, random_seed=3, strategy="mirrored")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow")
    run = subprocess.run([sys.executable, str(script), example["module"].__file__, json.dumps(values)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MirroredStrategy with 2 replica(s)" in run.stderr, run.stderr[-2000:]
    result = json.loads(run.stdout.split("RESULT ", 1)[1])
    assert result["step"] == 80
    assert result["accuracy"] >= 0.7, result
    lines = (out / "predictions.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == [str(i) for i in range(10)]


def test_inference_without_checkpoint_or_init_says_what_to_do(example, tmp_path):
    model = AlbertClassifier(example["config"], num_labels=2)
    with pytest.raises(ValueError, match="nothing to run"):
        driver.restore_for_inference(model, str(tmp_path), None)
    with pytest.raises(TypeError, match="abstract"):
        driver.Task(None, None)
    task = example["module"].SentimentTask(None, None)
    with pytest.raises(ValueError, match="no prediction stage"):
        driver.Task.predict(task, model, None)   # the base refusal of tasks without predictions


def test_the_task_contract_is_small():
    # What a task says to the driver: at most 12 members (Model Garden's `base_task.Task` has about 14).
    members = {name for name in vars(driver.Task) if not name.startswith("_")}
    members |= {"options", "runtime"}
    # `label_names`: what a run records of its labels (`run_record`, read by the multi-task export).
    assert members == {"options", "runtime", "check", "build_model", "train_data", "loss", "evaluate", "predict",
                       "export", "label_names"}, members


def test_the_checks_before_any_work(example, tmp_path):
    config_file = tmp_path / "albert_config.json"
    AlbertConfig.from_dict(dict(example["config"].to_dict(), vocab_size=1000)).to_json_file(str(config_file))
    with pytest.raises(ValueError, match=r"has \d+ pieces but `vocab_size` of .* is 1000") as error:
        _run(example, tmp_path / "out", albert_config_file=str(config_file))
    assert example["spm"] in str(error.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"is not a checkpoint: .*model\.ckpt-best\.index does not exist"):
        check_readable(str(tmp_path / "model.ckpt-best"))
    partial = tmp_path / "partial"
    partial.mkdir()
    for split in ("train", "dev"):
        (partial / f"{split}.tsv").write_text(open(os.path.join(example["data"], f"{split}.tsv")).read())
    with pytest.raises(ValueError, match="no test.tsv"):
        _run(example, tmp_path / "out", data_dir=str(partial))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("runner", ["run_classifier", "run_squad", "run_race", "run_pretraining"])
def test_runner_seed_and_recompute_flags_and_help_paragraph(runner):
    command = commands.find(runner)
    values = flags.FlagValues()
    flag_lib.define_flags(command.options, flag_values=values, no_flag=command.no_flag, only=command.only)
    assert (values["random_seed"].default, values["recompute"].default) == (None, False)
    help_text = command.help_text.split("\n\n")[0]
    assert help_text.startswith(("Fine-tunes", "Pretrains")) and "--output_dir" in help_text


def test_model_kwargs_pass_recompute_only_when_set():
    runtime = driver.Runtime(RuntimeOptions(), None, None)
    assert driver.model_kwargs(runtime) == {}
    runtime.options = RuntimeOptions(recompute=True)
    assert driver.model_kwargs(runtime) == {"recompute": True}
