"""The main job end to end with a tiny budget: every step, every artifact, the report, re-use on re-run, `--init`
from a release name served by a loopback server, the labelled task's files, and the accuracy bound's logic."""

import functools
import http.server
import json
import os
import shutil
import subprocess
import tarfile
import threading

import numpy as np
import pytest

from quickstart_runs import QUICKSTART, run_cli


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("quickstart")
    return output_dir, run_cli(output_dir)


@pytest.mark.e2e
def test_quickstart_writes_every_artifact(quickstart_run):
    from albert_tf.quickstart import task as quickstart_task  # Deferred: the module-level imports stay TensorFlow-free.

    output_dir, proc = quickstart_run
    for name in ("corpus_train.txt", "corpus_heldout.txt", "spm.model", "spm.vocab", "train.tfrecord",
                 "heldout.tfrecord", "albert_config.json", "quickstart_summary.json", "quickstart_curves.png"):
        assert (output_dir / name).stat().st_size > 0, name
    task_dir = output_dir / "glue" / "STDLIB"
    for name in ("train.tsv", "dev.tsv", "test.tsv", "test_labels.tsv"):
        assert (task_dir / name).stat().st_size > 0, name
    assert (output_dir / "pretrain" / "model.ckpt-12.index").exists()
    summary = json.loads((output_dir / "quickstart_summary.json").read_text())
    config = json.loads((output_dir / "albert_config.json").read_text())
    assert config["num_hidden_groups"] == 1 and config["embedding_size"] < config["hidden_size"]
    assert config["hidden_dropout_prob"] == 0 and config["vocab_size"] == 600
    for key in ("untrained", "trained"):
        for metric in ("masked_lm_accuracy", "sentence_order_accuracy", "masked_lm_loss"):
            assert 0.0 <= summary[key][metric] < 100.0
    assert 0.0 < summary["chance"]["mlm_unigram_accuracy"] < 1.0
    # Fill-mask: the rank of a fitting word among the 600 pieces, before and after pretraining.
    assert len(summary["fill_mask"]) == 6
    # (None where no fitting word is one piece of this small vocabulary.)
    ranks = [row[key] for row in summary["fill_mask"] for key in ("rank_before", "rank_after")]
    assert all(rank is None or 1 <= rank <= 600 for rank in ranks) and any(rank is not None for rank in ranks)
    # Both fine-tuning runs through the GLUE runner: its files, the dev accuracy of its best checkpoint, and the
    # test accuracy recomputed here from its predictions and the held-back answers.
    assert summary["task"]["majority_dev"] == summary["task"]["majority_test"] == 0.25
    answers = dict(line.split("\t") for line in (task_dir / "test_labels.tsv").read_text().splitlines()[1:])
    for run, key in (("pretrained", "finetune"), ("random", "finetune_random")):
        run_dir = output_dir / "finetune" / run
        for name in ("eval_results.txt", "best_trial.txt", "model.ckpt-best.index", "submit_results.tsv"):
            assert (run_dir / name).exists(), (run, name)
        rows = [line.split("\t") for line in (run_dir / "submit_results.tsv").read_text().splitlines()[1:]]
        assert len(rows) == len(answers) == summary["task"]["examples"]["test"]
        assert summary[key]["test_accuracy"] == sum(answers[i] == label for i, label in rows) / len(rows)
        assert 0.0 <= summary[key]["dev_accuracy"] <= 1.0
        assert summary[key]["dev_accuracy"] == max(acc for _, acc in summary[key]["dev_history"])
        assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))
    # The export, served from a fresh process through SessionModel: one answer of the task's labels per sentence.
    export_path = summary["finetune"]["export_path"]
    assert os.path.exists(os.path.join(export_path, "saved_model.pb"))
    served = summary["served"]
    assert "serve_text" in served["signatures"] and len(served["answers"]) == 5
    for answer, (sentence, expected) in zip(served["answers"], quickstart_task.SERVE_QUERIES):
        assert answer["sentence"] == sentence and answer["expected"] == expected
        assert answer["label"] in quickstart_task.CLASSES and 0.0 < answer["score"] <= 1.0
    # The report: the tables, the served answers, the PNG and the TensorBoard command.
    out = proc.stdout
    for text in ("MLM accuracy (unigram base)", "Where a fitting word ranks", "majority baseline",
                 "fine-tuned from random initialisation", "answers right", "quickstart_curves.png",
                 f"tensorboard --logdir {output_dir}", "--init=albert_base_v2", "run_pretraining.py"):
        assert text in out, text


@pytest.mark.e2e
def test_quickstart_rerun_reuses_finished_steps(quickstart_run):
    output_dir, _ = quickstart_run
    mtimes = {name: (output_dir / name).stat().st_mtime
              for name in ("spm.model", "train.tfrecord", "finetune/pretrained/model.ckpt-best.index")}
    proc = run_cli(output_dir)
    for name, mtime in mtimes.items():
        assert (output_dir / name).stat().st_mtime == mtime, name
    assert "vocab 0s" in proc.stdout and "data 0s" in proc.stdout and "finetune 0s" in proc.stdout


def _release_tarball(root, spm_model):
    """A tiny model in the layout of Google's release tarballs (`albert_base_v2/` with `model.ckpt-best.*`,
    `albert_config.json`, `30k-clean.model`), with the quickstart's SentencePiece model; returns the model."""
    import tensorflow as tf
    import original_checkpoints as oc
    from albert_tf import AlbertModel
    from albert_tf.config import AlbertConfig

    config = dict(vocab_size=600, embedding_size=16, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                  max_position_embeddings=64, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, initializer_range=0.02, num_hidden_layers=2,
                  num_hidden_groups=1, inner_group_num=1)
    tf.keras.utils.set_random_seed(7)
    model = AlbertModel(AlbertConfig.from_dict(config))
    ids = np.array([[2, 7, 9, 3]], np.int32)
    model({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}, training=False)
    release = root / "build" / "albert_base_v2"
    oc.save_original_checkpoint(model, str(release / "model.ckpt-best"), slots=())
    os.remove(release / "checkpoint")   # Google's tarballs ship no `checkpoint` state file.
    (release / "albert_config.json").write_text(json.dumps(config))
    shutil.copy(spm_model, release / "30k-clean.model")
    (root / "albert_models").mkdir()
    with tarfile.open(root / "albert_models" / "albert_base_v2.tar.gz", "w:gz") as tar:
        tar.add(str(release), arcname="albert_base_v2")
    return model


class _LoggingHandler(http.server.SimpleHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        del args

    def do_GET(self):
        self.requests.append(self.path)
        super().do_GET()


@pytest.mark.e2e
def test_init_fine_tunes_a_release_by_name_from_a_loopback_server(quickstart_run, tmp_path):
    """`--init=albert_base_v2` downloads the release (from 127.0.0.1 here), skips pretraining, and the fine-tuning
    starts from its weights: with a learning rate of 1e-9 the fine-tuned encoder is the release's, while the
    random-initialisation run's is not."""
    from albert_tf import AlbertModel

    output_dir, _ = quickstart_run
    served = tmp_path / "served"
    served.mkdir()
    release = _release_tarball(served, output_dir / "spm.model")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_LoggingHandler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"ALBERT_TF_RELEASES_URL": f"http://127.0.0.1:{server.server_port}/albert_models",
               "ALBERT_TF_CACHE": str(tmp_path / "cache"), "ALBERT_TF_OFFLINE": "0", "NO_PROXY": "127.0.0.1"}
        out = tmp_path / "init_run"
        proc = run_cli(out, "--init=albert_base_v2", "--finetune_learning_rate=1e-9", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert _LoggingHandler.requests == ["/albert_models/albert_base_v2.tar.gz"]
    assert (tmp_path / "cache" / "downloads" / "albert_base_v2" / "complete.json").exists()
    assert not (out / "pretrain").exists() and not (out / "spm.model").exists()   # No pretraining here.
    summary = json.loads((out / "quickstart_summary.json").read_text())
    assert summary["init"] == "albert_base_v2" and "pretrain" not in summary["timings_s"]
    assert "fine-tuned from --init=albert_base_v2" in proc.stdout and "answers right" in proc.stdout
    expected = release.embeddings.word_embeddings.numpy()
    tuned = AlbertModel.from_pretrained(str(out / "finetune" / "pretrained" / "model.ckpt-best"),
                                        config=release.config)
    np.testing.assert_allclose(tuned.embeddings.word_embeddings.numpy(), expected, atol=1e-6)
    scratch = AlbertModel.from_pretrained(str(out / "finetune" / "random" / "model.ckpt-best"),
                                          config=release.config)
    assert np.abs(scratch.embeddings.word_embeddings.numpy() - expected).max() > 1e-3


def test_an_unknown_init_name_is_one_line_and_exit_2(tmp_path):
    cmd = [*QUICKSTART, f"--output_dir={tmp_path}", "--init=albert_tiny_v9"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                          timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and "albert_tiny_v9" in lines[0] and "albert_base_v2" in lines[0], proc.stderr[-2000:]
    assert not os.path.exists(tmp_path / "corpus_train.txt")   # Refused before any work.


def test_cli_help_paragraphs_name_inputs_steps_and_outputs():
    from albert_tf.commands import export
    from albert_tf.quickstart import run as quickstart  # Deferred: imports TensorFlow (CLI tests use subprocesses).

    for word in ("pydoc_data", "SentencePiece", "TFRecords", "pretrains", "held-out", "fine-tunes", "GLUE runner",
                 "random initialisation", "majority baseline", "SavedModel", "fresh process", "TF Serving",
                 "--init=albert_base_v2", "--output_dir", "./quickstart_output", "quickstart_curves.png"):
        assert word in quickstart.CLI_HELP, word
    for word in ("--input", "<export_dir>/<version>/", "serving_default", "serve_examples", "serve_text",
                 "tensorflow-text"):
        assert word in export.CLI_HELP, word


@pytest.fixture(scope="module")
def corpus_and_task(tmp_path_factory):
    from albert_tf.quickstart import corpus as quickstart_corpus
    from albert_tf.quickstart import task as quickstart_task

    root = tmp_path_factory.mktemp("corpus")
    modules, topics = quickstart_corpus.module_docstrings(), quickstart_corpus.topic_documents()
    heldout = quickstart_task.heldout_docstrings(modules)
    documents = topics + quickstart_corpus.docstring_documents(modules=modules, exclude=heldout)
    train, held, stats = quickstart_corpus.write_corpus(str(root), documents=documents)
    splits = quickstart_task.build_task(modules, heldout, seen=[s for _, sentences in topics for s in sentences])
    task_dir = quickstart_task.write_task(str(root / "glue"), splits)
    return dict(modules=modules, documents=quickstart_corpus.corpus_documents(modules), heldout=heldout,
                train=train, held=held, stats=stats, splits=splits, task_dir=task_dir)


def test_corpus_is_prose_from_this_python_and_the_demo_sentences_are_not_in_it(corpus_and_task):
    from albert_tf.quickstart import run as quickstart
    from albert_tf.quickstart import task as quickstart_task  # Deferred: imports TensorFlow.

    stats = corpus_and_task["stats"]
    # The pydoc topics and the standard library's docstrings: well over a megabyte of text, one split of ten.
    assert stats["train"]["characters"] > 1_000_000 and stats["train"]["documents"] > 300
    assert 0.05 < stats["heldout"]["documents"] / stats["train"]["documents"] < 0.2
    train_text = open(corpus_and_task["train"], encoding="utf-8").read()
    heldout_text = open(corpus_and_task["held"], encoding="utf-8").read().lower()
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
    every_text = " ".join(" ".join(sentences) for _, sentences in corpus_and_task["documents"]).lower()
    for sentence, label in quickstart_task.SERVE_QUERIES:
        assert sentence.lower().rstrip(".") not in every_text, sentence
        assert label in quickstart_task.CLASSES


def test_the_task_is_balanced_glue_tsv_with_dev_and_test_from_docstrings_pretraining_does_not_see(corpus_and_task):
    from albert_tf.quickstart import task as quickstart_task
    from albert_tf.tasks.glue import data as glue

    assert tuple(quickstart_task.CLASSES) == glue.StdlibProcessor.LABELS
    splits, heldout = corpus_and_task["splits"], corpus_and_task["heldout"]
    for split, minimum in (("train", 400), ("dev", 100), ("test", 100)):
        counts = {label: sum(1 for _, l in splits[split] if l == label) for label in quickstart_task.CLASSES}
        assert len(set(counts.values())) == 1 and sum(counts.values()) >= minimum, (split, counts)
    assert quickstart_task.majority_baseline(splits) == 0.25
    # Every class has docstrings held out for dev/test; no sentence of a dev/test passage is in the pretraining
    # files, and the three splits share no passage.
    assert {quickstart_task.document_class(name) for name, _ in heldout} == set(quickstart_task.CLASSES)
    pretraining_lines = set((open(corpus_and_task["train"], encoding="utf-8").read()
                             + open(corpus_and_task["held"], encoding="utf-8").read()).splitlines())
    dev_test = {text for split in ("dev", "test") for text, _ in splits[split]}
    found = set()
    for name, docstrings in corpus_and_task["modules"]:
        for index, sentences in enumerate(docstrings):
            for group in quickstart_task._groups(sentences) if (name, index) in heldout else ():
                if " ".join(group) in dev_test:
                    found.add(" ".join(group))
                    assert not set(group) & pretraining_lines, (name, index, group)
    assert found == dev_test
    assert not dev_test & {text for text, _ in splits["train"]}
    assert not {text for text, _ in splits["dev"]} & {text for text, _ in splits["test"]}
    # The GLUE runner's processor reads the files: labels, texts (lower-cased) and the unlabelled test set.
    processor = glue.get_processor("stdlib")
    data_dir = os.path.dirname(corpus_and_task["task_dir"])
    train = processor.get_train_examples(data_dir)
    assert [e.label for e in train] == [label for _, label in splits["train"]]
    assert train[0].text_a == " ".join(splits["train"][0][0].split()).lower()
    test = processor.get_test_examples(data_dir)
    assert len(test) == len(splits["test"]) and {e.label for e in test} == {"async"}   # The placeholder label.
    assert quickstart_task.read_test_labels(corpus_and_task["task_dir"])["0"] == splits["test"][0][1]


def test_the_accuracy_bound_and_the_comparison_say_what_the_numbers_say():
    from albert_tf.quickstart import report

    def summary(dev, majority):
        return {"finetune": {"dev_accuracy": dev}, "task": {"majority_dev": majority}}

    assert report.learned_the_task(summary(0.80, 0.25)) and report.learned_the_task(summary(0.95, 0.30))
    assert not report.learned_the_task(summary(0.79, 0.25))
    assert not report.learned_the_task(summary(0.95, 0.34))       # Three balanced classes: too easy a bar.
    assert report.compare_initialisations(0.90, 0.60, 212).startswith("Starting from the pretrained weights helps")
    assert report.compare_initialisations(0.60, 0.90, 212).startswith("Starting from the pretrained weights does worse")
    assert report.compare_initialisations(0.86, 0.85, 212).startswith("No clear difference")
    # The margin shrinks with more dev examples: the same gap is clear on 5000 examples and not on 50.
    assert report.compare_initialisations(0.86, 0.82, 5000).startswith("Starting from the pretrained weights helps")
    assert report.compare_initialisations(0.86, 0.82, 50).startswith("No clear difference")


@pytest.mark.e2e
def test_a_shortened_run_of_the_default_model_learns(tmp_path):
    """The default corpus, vocabulary and model, 300 pretraining steps instead of the default: the held-out
    masked-LM loss falls far below the untrained model's and the accuracy reaches at least the unigram predictor's.
    A broken gradient, optimizer, mask or data path leaves the loss near ln(vocab) and fails it."""
    cmd = [*QUICKSTART, f"--output_dir={tmp_path}", "--num_train_steps=300",
           "--num_warmup_steps=30", "--dupe_factor=2", "--heldout_dupe_factor=1", "--save_checkpoints_steps=300",
           "--finetune_steps=10", "--nocompare_random_init", "--noplots"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads((tmp_path / "quickstart_summary.json").read_text())
    before, after, chance = summary["untrained"], summary["trained"], summary["chance"]
    assert before["masked_lm_loss"] > 7.5                    # ln(3000) = 8.0: the untrained model is uniform
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.5, (before, after)
    assert after["masked_lm_accuracy"] >= chance["mlm_unigram_accuracy"] - 0.01, (after, chance)
    assert "Where a fitting word ranks" in proc.stdout
