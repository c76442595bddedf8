"""The main job end to end with a tiny budget: every step, every artifact, the report, and re-use on re-run."""

import json
import os
import subprocess
import sys

import pytest

TINY_FLAGS = ["--vocab_size=600", "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=1",
              "--train_batch_size=16", "--num_train_steps=12", "--num_warmup_steps=2", "--hidden_size=32",
              "--num_hidden_layers=2", "--num_attention_heads=2", "--embedding_size=16",
              "--intermediate_size=64", "--iterations_per_loop=6", "--save_checkpoints_steps=6",
              "--num_workers=1", "--nojit_compile"]


def run_cli(output_dir, *extra):
    cmd = [sys.executable, "-m", "albert_tf.quickstart", f"--output_dir={output_dir}", *TINY_FLAGS, *extra]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("quickstart")
    return output_dir, run_cli(output_dir)


def test_quickstart_writes_every_artifact(quickstart_run):
    output_dir, proc = quickstart_run
    for name in ("corpus_train.txt", "corpus_heldout.txt", "spm.model", "spm.vocab", "train.tfrecord",
                 "heldout.tfrecord", "albert_config.json", "quickstart_summary.json"):
        assert (output_dir / name).stat().st_size > 0, name
    corpus = (output_dir / "corpus_train.txt").read_text(encoding="utf-8")
    assert "\n\n" in corpus and len(corpus.split("\n\n")) > 50      # documents separated by blank lines
    assert (output_dir / "pretrain" / "model.ckpt-12.index").exists()
    summary = json.loads((output_dir / "quickstart_summary.json").read_text())
    export_path = summary["export_path"]
    assert os.path.exists(os.path.join(export_path, "saved_model.pb"))
    assert os.path.isdir(os.path.join(export_path, "assets"))
    config = json.loads((output_dir / "albert_config.json").read_text())
    assert config["num_hidden_groups"] == 1 and config["embedding_size"] < config["hidden_size"]
    assert config["hidden_dropout_prob"] == 0 and config["vocab_size"] == 600
    for key in ("untrained", "trained"):
        for metric in ("masked_lm_accuracy", "sentence_order_accuracy", "masked_lm_loss"):
            assert 0.0 <= summary[key][metric] < 100.0
    assert 0.0 < summary["chance"]["sop_majority_accuracy"] <= 1.0
    assert 0.0 < summary["chance"]["mlm_unigram_accuracy"] < 1.0
    # The fresh-process raw-text query: one list of 5 guesses per [MASK] of each of the 6 sentences.
    top = summary["queries"]["top_tokens"]
    assert len(top) == 6 and all(len(sentence) == 1 and len(sentence[0]) == 5 for sentence in top)
    assert len(summary["queries"]["fitting"]) == 6
    # The report shows the table and the follow-up commands.
    out = proc.stdout
    assert "MLM accuracy (unigram base)" in out and "SOP accuracy (majority)" in out
    assert "[MASK] ->" in out and "run_pretraining.py" in out and "run_classifier.py" in out


def test_quickstart_rerun_reuses_finished_steps(quickstart_run):
    output_dir, _ = quickstart_run
    spm_mtime = (output_dir / "spm.model").stat().st_mtime
    rec_mtime = (output_dir / "train.tfrecord").stat().st_mtime
    proc = run_cli(output_dir)
    assert (output_dir / "spm.model").stat().st_mtime == spm_mtime
    assert (output_dir / "train.tfrecord").stat().st_mtime == rec_mtime
    assert "vocab 0s" in proc.stdout and "data 0s" in proc.stdout


def test_cli_help_paragraphs_name_inputs_steps_and_outputs():
    from albert_tf import export_cli as export, quickstart  # Deferred: imports TensorFlow (CLI tests use subprocesses).

    for word in ("pydoc_data", "SentencePiece", "TFRecords", "pretrains", "held-out", "SavedModel", "fresh process",
                 "--output_dir", "./quickstart_output"):
        assert word in quickstart.CLI_HELP, word
    for word in ("--input", "<export_dir>/<version>/", "serving_default", "serve_examples", "serve_text",
                 "tensorflow-text"):
        assert word in export.CLI_HELP, word


def test_corpus_is_prose_from_this_python_and_the_demo_sentences_are_not_in_it(tmp_path):
    from albert_tf import quickstart, quickstart_corpus  # Deferred: imports TensorFlow.

    train, heldout, stats = quickstart_corpus.write_corpus(str(tmp_path))
    # The pydoc topics and the standard library's docstrings: well over a megabyte of text, one split of ten.
    assert stats["train"]["characters"] > 1_000_000 and stats["train"]["documents"] > 300
    assert 0.05 < stats["heldout"]["documents"] / stats["train"]["documents"] < 0.2
    train_text = open(train, encoding="utf-8").read()
    heldout_text = open(heldout, encoding="utf-8").read().lower()
    assert ">>>" not in train_text and "Return a new" in train_text   # docstrings, doctest lines dropped
    texts = (train_text.lower(), heldout_text)
    for sentence, answers in quickstart.FILL_MASK_QUERIES:
        assert sentence.count("[MASK]") == 1, sentence
        for answer in answers:
            filled = sentence.replace("[MASK]", answer).lower()
            assert all(filled not in text for text in texts), filled
            words = filled.rstrip(".").split()
            i = words.index(answer)
            window = " ".join(words[max(0, i - 2):i + 3])      # the answer and two words either side
            assert window not in heldout_text, window


def test_fitting_answers_compare_the_top_piece_without_the_word_boundary():
    from albert_tf import quickstart  # Deferred: imports TensorFlow.

    top = [[["\u2581def", "\u2581the"]], [["\u2581the", "\u2581error"]]] + [[["x"]]] * 4
    assert quickstart.fitting_answers(top) == [True, False, False, False, False, False]


def test_a_shortened_run_of_the_default_model_learns(tmp_path):
    """The default corpus, vocabulary and model, 300 steps instead of 1500: the held-out masked-LM loss falls far
    below the untrained model's and the accuracy reaches at least the unigram predictor's. A broken gradient,
    optimizer, mask or data path leaves the loss near ln(vocab) and fails it."""
    cmd = [sys.executable, "-m", "albert_tf.quickstart", f"--output_dir={tmp_path}", "--num_train_steps=300",
           "--num_warmup_steps=30", "--dupe_factor=2", "--heldout_dupe_factor=1", "--save_checkpoints_steps=300"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads((tmp_path / "quickstart_summary.json").read_text())
    before, after, chance = summary["untrained"], summary["trained"], summary["chance"]
    assert before["masked_lm_loss"] > 7.5                    # ln(3000) = 8.0: the untrained model is uniform
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.5, (before, after)
    assert after["masked_lm_accuracy"] >= chance["mlm_unigram_accuracy"] - 0.01, (after, chance)
    assert "Top answer fits:" in proc.stdout
