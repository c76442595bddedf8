"""The task driver: the worked example of docs/adding_a_task.md runs as written, a new task in one module."""

import importlib.util
import os
import random
import re
import subprocess
import sys

import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_tf.checkpoints.restore import check_readable
from albert_tf.config import AlbertConfig
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.training import driver
import original_checkpoints as oc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


@pytest.mark.e2e
def test_the_documented_task_trains_evaluates_and_predicts(example, tmp_path):
    out = tmp_path / "out"
    result = example["module"].run_sentiment(example["data"], str(out), example["config_file"], example["spm"],
                                             max_seq_length=16, num_train_steps=80, learning_rate=2e-3,
                                             random_seed=3)
    assert result["train"]["global_step"] == 80 and result["train"]["num_train_steps"] == 80
    assert result["eval"]["eval_accuracy"] >= 0.85, result
    assert result["eval"]["best_step"] in (40, 80)
    names = set(os.listdir(out))
    assert {"eval_results.txt", "best_trial.txt", "model.ckpt-best.index", "predictions.tsv"} <= names
    assert not [name for name in names if ".tmp" in name]
    lines = (out / "predictions.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == [str(i) for i in range(10)]
    truth = [label for label, _ in _sentences(3, 10)]
    assert sum(int(line.split("\t")[1]) == label for line, label in zip(lines, truth)) >= 8

    # The same weights as a checkpoint of the original TF1 code: the same predictions.
    task = example["module"].SentimentTask(example["data"], str(tmp_path), None, 16, 80)
    model = task.build_model(example["config"])
    driver.restore_for_inference(task, model, str(out), None)
    original = tmp_path / "original"
    oc.save_original_checkpoint(model, str(original / "model.ckpt-best"))
    example["module"].run_sentiment(example["data"], str(original), example["config_file"], example["spm"],
                                    max_seq_length=16, do_train=False, do_eval=False)
    assert (original / "predictions.tsv").read_text() == (out / "predictions.tsv").read_text()


def test_inference_without_checkpoint_or_init_says_what_to_do(example, tmp_path):
    task = example["module"].SentimentTask(example["data"], str(tmp_path), None, 16, 10)
    model = task.build_model(example["config"])
    with pytest.raises(ValueError, match="nothing to run"):
        driver.restore_for_inference(task, model, str(tmp_path), None)
    with pytest.raises(TypeError, match="abstract"):
        driver.Task()
    with pytest.raises(ValueError, match="no prediction stage"):
        driver.Task.predict(task, model, None, None)   # the base refusal of tasks without predictions


def test_the_checks_before_any_work(example, tmp_path):
    config_file = tmp_path / "albert_config.json"
    AlbertConfig.from_dict(dict(example["config"].to_dict(), vocab_size=1000)).to_json_file(str(config_file))
    with pytest.raises(ValueError, match=r"has \d+ pieces but `vocab_size` of .* is 1000") as error:
        example["module"].run_sentiment(example["data"], str(tmp_path / "out"), str(config_file), example["spm"])
    assert example["spm"] in str(error.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"is not a checkpoint: .*model\.ckpt-best\.index does not exist"):
        check_readable(str(tmp_path / "model.ckpt-best"))


@pytest.mark.e2e
@pytest.mark.parametrize("script", ["run_classifier", "run_squad", "run_race", "run_pretraining"])
def test_cli_seed_and_recompute_flags_and_help_paragraph(script):
    code = (f"import sys; sys.argv = ['{script}.py']; import {script}; from absl import flags; "
            "print(repr((flags.FLAGS['random_seed'].default, flags.FLAGS['recompute'].default))); "
            f"print({script}.__doc__.split(chr(10) * 2)[0])")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, help_text = proc.stdout.split("\n", 1)
    assert first == "(None, False)"
    assert help_text.startswith(("Fine-tunes", "Pretrains")) and "--output_dir" in help_text
    assert "\n\n" not in help_text.strip()


def test_model_kwargs_pass_recompute_only_when_set():
    assert driver.model_kwargs(False) == {}
    assert driver.model_kwargs(True) == {"recompute": True}
