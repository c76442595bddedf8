"""GLUE: processors on the real file layouts, feature conversion, cached TFRecords, metrics, the classifier
model, `run_classifier` train -> eval -> predict end to end, and bad input."""

import csv
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_tf.checkpoints import save_tf1_checkpoint, source_num_labels
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.tasks.glue import data as glue
from albert_tf.text import packing
from albert_tf.errors import InputError
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier, classifier_loss
from albert_tf.tasks.squad.model import AlbertSquadV1
from albert_tf.training import metrics
from albert_tf.tasks.glue import task as classifier_task
from albert_tf.tasks.glue.task import hparams_preset, run_classifier
import original_checkpoints as oc
from recording import Built, recording
from glue_fixtures import MAX_SEQ, MNLI_HEADER, REPO, _write, sentiment_rows, stsb_rows, write_cola
from glue_fixtures import glue_root, model_files, tokenizer  # noqa: F401  (fixtures)


# --- Processors ------------------------------------------------------------------------------------------

def test_task_names_are_case_insensitive_and_complete():
    assert sorted(glue.PROCESSORS) == sorted(["cola", "mnli", "mismnli", "mrpc", "rte", "sst-2", "sts-b", "qqp",
                                              "qnli", "wnli", "ax", "stdlib"])
    assert isinstance(glue.get_processor("MNLI"), glue.MnliProcessor)
    assert isinstance(glue.get_processor("Sts-B"), glue.StsbProcessor)
    with pytest.raises(ValueError, match="Task not found.*'sst'"):
        glue.get_processor("sst")


def test_mnli_columns_header_guids_and_lower_casing(glue_root):
    p = glue.get_processor("mnli", use_spm=True, do_lower_case=True)
    train = p.get_train_examples(glue_root)
    assert len(train) == 6  # header skipped
    assert (train[0].guid, train[0].text_a, train[0].text_b, train[0].label) == (
        "0", "premise number 0 .", "hypothesis 0 here .", "entailment")
    dev = p.get_dev_examples(glue_root)
    assert dev[1].text_a == "dev_matched premise 1 ." and dev[1].label == "neutral"
    test = p.get_test_examples(glue_root)
    assert [e.guid for e in test] == ["0", "1", "2"] and {e.label for e in test} == {"contradiction"}
    mis = glue.get_processor("mismnli").get_dev_examples(glue_root)
    assert mis[0].text_a == "dev_mismatched premise 0 ."
    assert glue.get_processor("mismnli").get_test_examples(glue_root)[0].text_b == "test_mismatched hypothesis 0 ."
    cased = glue.get_processor("mnli", use_spm=True, do_lower_case=False).get_train_examples(glue_root)
    assert cased[0].text_a == "Premise number 0 ."
    assert p.get_labels() == ["contradiction", "entailment", "neutral"]


def test_cola_train_is_headerless_and_test_has_a_header(glue_root):
    p = glue.get_processor("cola")
    train = p.get_train_examples(glue_root)
    rows = sentiment_rows(4, 8)
    assert len(train) == 8  # the first line is data
    assert train[0].guid == "train-0" and train[0].label == rows[0][1] and train[0].text_b is None
    assert train[0].text_a == rows[0][0].lower()
    test = p.get_test_examples(glue_root)
    assert len(test) == 3 and test[0].guid == "0" and test[0].label == "0"


def test_sst2_stsb_and_small_tasks(glue_root):
    sst = glue.get_processor("sst-2").get_train_examples(glue_root)
    assert sst[0].guid == "train-1" and sst[0].label in ("0", "1")
    assert glue.get_processor("sst-2").get_test_examples(glue_root)[2].guid == "2"

    stsb = glue.get_processor("sts-b")
    assert stsb.get_labels() == [None] and stsb.is_regression
    train = stsb.get_train_examples(glue_root)
    assert isinstance(train[0].label, float) and train[0].label == stsb_rows(7, 48)[0][2]
    assert train[0].guid == "0"
    assert [e.label for e in stsb.get_test_examples(glue_root)] == [0] * 5

    mrpc = glue.get_processor("mrpc")
    assert [(e.guid, e.label) for e in mrpc.get_train_examples(glue_root)] == [("train-1", "1"), ("train-2", "0")]
    assert [(e.guid, e.label) for e in mrpc.get_test_examples(glue_root)] == [("0", "0"), ("1", "0")]
    assert mrpc.get_train_examples(glue_root)[0].text_b == "he went away ."

    qqp = glue.get_processor("qqp").get_train_examples(glue_root)
    assert [e.guid for e in qqp] == ["5", "7"]  # the short row is skipped, as the original
    assert qqp[1].label == "0" and qqp[1].text_b == "when ?"
    assert glue.get_processor("qqp").get_test_examples(glue_root)[0].text_b == "was it ?"

    qnli = glue.get_processor("qnli")
    assert [e.label for e in qnli.get_train_examples(glue_root)] == ["entailment", "not_entailment"]
    assert qnli.get_test_examples(glue_root)[0].label == "entailment"
    assert glue.get_processor("rte").get_test_examples(glue_root)[1].guid == "1"
    assert glue.get_processor("wnli").get_train_examples(glue_root)[0].label == "1"
    ax = glue.get_processor("ax")
    assert [(e.guid, e.label) for e in ax.get_test_examples(glue_root)] == [("0", "contradiction"),
                                                                           ("1", "contradiction")]
    with pytest.raises(ValueError, match="no train split"):
        ax.get_train_examples(glue_root)


def test_bad_files_name_the_path_and_line(glue_root, tmp_path):
    with pytest.raises(ValueError, match="Task directory .*RTE.* not found"):
        glue.get_processor("rte").get_train_examples(str(tmp_path))
    os.makedirs(tmp_path / "RTE")
    with pytest.raises(ValueError, match=r"train\.tsv.* not found"):
        glue.get_processor("rte").get_train_examples(str(tmp_path))
    _write(str(tmp_path / "RTE" / "train.tsv"), [["index", "sentence1", "sentence2", "label"],
                                                 ["0", "A .", "B .", "entailment"],
                                                 ["1", "only two columns"]])
    with pytest.raises(InputError, match=r"RTE/train\.tsv:3: expected 4 tab-separated columns \(as the header\), "
                                         r"got 2: \['1', 'only two columns'\]$"):
        glue.get_processor("rte").get_train_examples(str(tmp_path))
    _write(str(tmp_path / "RTE" / "train.tsv"), [["index", "sentence1", "sentence2", "label"],
                                                 ["0", "A .", "B .", "maybe"]])
    with pytest.raises(ValueError, match=r"RTE/train\.tsv:2: unknown label 'maybe'"):
        glue.get_processor("rte").get_train_examples(str(tmp_path))
    os.makedirs(tmp_path / "MNLI")
    _write(str(tmp_path / "MNLI" / "train.tsv"), [MNLI_HEADER + ["label1", "gold_label"],
                                                  ["0", "1", "2", "g", "p", "p", "p", "p", "a ."]])
    with pytest.raises(InputError, match=r"MNLI/train\.tsv:2: expected 12 tab-separated columns .*, got 9"):
        glue.get_processor("mnli").get_train_examples(str(tmp_path))
    os.makedirs(tmp_path / "STS-B")
    _write(str(tmp_path / "STS-B" / "dev.tsv"), [["h"] * 10, ["0"] * 9 + ["high"]])
    with pytest.raises(ValueError, match=r"STS-B/dev\.tsv:2: the score .* float.*'high'"):
        glue.get_processor("sts-b").get_dev_examples(str(tmp_path))


def test_a_row_with_a_merged_column_is_refused(tmp_path):
    """Issue row: an MNLI dev row whose two sentences a stray tab merged has a column too few; the original
    reads a label word as `text_b` and scores it. Here it is one line naming the file and line."""
    header = MNLI_HEADER + ["label1", "label2", "label3", "label4", "label5", "gold_label"]
    good = ["0", "1", "2", "g", "p", "p", "p", "p", "A man .", "A dog .", "neutral", "neutral", "neutral",
            "neutral", "neutral", "neutral"]
    merged = good[:8] + ["A man . A dog ."] + good[10:]
    os.makedirs(tmp_path / "MNLI")
    dev = str(tmp_path / "MNLI" / "dev_matched.tsv")
    _write(dev, [header, good, merged])
    with pytest.raises(InputError, match=r"dev_matched\.tsv:3: expected 16 tab-separated columns \(as the header\), "
                                         r"got 15"):
        glue.get_processor("mnli").get_dev_examples(str(tmp_path))
    _write(dev, [header, good])
    assert [e.text_b for e in glue.get_processor("mnli").get_dev_examples(str(tmp_path))] == ["a dog ."]
    with open(dev, "ab") as f:
        f.write(b"1\t\xff\xfe bad\n")
    with pytest.raises(InputError, match=r"dev_matched\.tsv:3: expected UTF-8 text, got the bytes"):
        glue.get_processor("mnli").get_dev_examples(str(tmp_path))


# --- Features --------------------------------------------------------------------------------------------

def test_pair_truncation_pops_the_longer_from_the_end():
    a, b = list("abcdefg"), list("xyz")
    packing.truncate_pair(a, b, 6)
    assert a == list("abc") and b == list("xyz")
    a, b = list("ab"), list("wxyz")
    packing.truncate_pair(a, b, 4)
    assert a == list("ab") and b == list("wx")
    a, b = list("abc"), list("xyz")
    packing.truncate_pair(a, b, 4)  # ties pop from b first
    assert a == list("ab") and b == list("xy")


def test_convert_single_example_layout(tokenizer):
    pieces_a = tokenizer.tokenize("the movie was good .")
    pieces_b = tokenizer.tokenize("a very bad film and a very sad story and a poor plot .")
    max_len = 16
    ex = glue.InputExample("g", "the movie was good .", "a very bad film and a very sad story and a poor plot .",
                           "entailment")
    f = glue.convert_single_example(0, ex, ["contradiction", "entailment", "neutral"], max_len, tokenizer, "mnli")
    # Independent expectation: budget 13 tokens, pop from the longer one's end.
    a, b = list(pieces_a), list(pieces_b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) > len(b) else b).pop()
    tokens = ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
    ids = [tokenizer.vocab[t] for t in tokens]
    assert ids[0] == 2 and ids[len(a) + 1] == 3
    assert f.input_ids == ids + [0] * (max_len - len(ids))
    assert f.input_mask == [1] * len(ids) + [0] * (max_len - len(ids))
    assert f.segment_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (max_len - len(ids))
    assert f.label_id == 1 and f.is_real_example

    single = glue.InputExample("s", "a very bad film and a very sad story and a poor plot .", None, "0")
    f = glue.convert_single_example(0, single, ["0", "1"], 8, tokenizer, "sst-2")
    assert f.input_ids == [2] + [tokenizer.vocab[t] for t in pieces_b[:6]] + [3]
    assert f.segment_ids == [0] * 8 and f.input_mask == [1] * 8

    reg = glue.InputExample("r", "good", "bad", 3.5)
    assert glue.convert_single_example(0, reg, [None], 8, tokenizer, "sts-b").label_id == 3.5
    pad = glue.convert_single_example(0, glue.PaddingInputExample(), ["0", "1"], 8, tokenizer, "sst-2")
    assert pad.input_ids == [0] * 8 and not pad.is_real_example
    with pytest.raises(ValueError, match="unknown label 'maybe'"):
        glue.convert_single_example(0, glue.InputExample("u", "a", None, "maybe"), ["0", "1"], 8, tokenizer,
                                    "sst-2")


def test_cached_tfrecords_have_the_original_names_and_no_partial_file(glue_root, tokenizer, tmp_path):
    examples = glue.get_processor("sts-b").get_dev_examples(glue_root)
    path = glue.cache_file(str(tmp_path), "sts-b", "eval")
    assert path.endswith("sts-b_eval.tf_record")
    assert glue.file_based_convert_examples_to_features(examples, [None], MAX_SEQ, tokenizer, path, "sts-b") == 16
    record = next(iter(tf.data.TFRecordDataset(path))).numpy()
    feats = tf.train.Example.FromString(record).features.feature
    assert sorted(feats) == ["input_ids", "input_mask", "is_real_example", "label_ids", "segment_ids"]
    assert feats["label_ids"].float_list.value[0] == pytest.approx(examples[0].label)
    assert len(feats["input_ids"].int64_list.value) == MAX_SEQ
    arrays = glue.read_features(path, MAX_SEQ, "sts-b")
    assert arrays["label_ids"].dtype == np.float32 and arrays["input_ids"].dtype == np.int32
    np.testing.assert_allclose(arrays["label_ids"], [e.label for e in examples], rtol=1e-6)

    sst = glue.get_processor("sst-2").get_dev_examples(glue_root)
    sst_path = glue.cache_file(str(tmp_path), "sst-2", "eval")
    glue.file_based_convert_examples_to_features(glue.pad_examples(sst[:5], 4), ["0", "1"], MAX_SEQ, tokenizer,
                                                 sst_path, "sst-2")
    arrays = glue.read_features(sst_path, MAX_SEQ, "sst-2")
    assert arrays["label_ids"].dtype == np.int32
    assert arrays["is_real_example"].tolist() == [1] * 5 + [0] * 3

    bad = sst[:3] + [glue.InputExample("x", "text", None, "2")]
    bad_path = str(tmp_path / "bad.tf_record")
    with pytest.raises(ValueError, match="unknown label '2'"):
        glue.file_based_convert_examples_to_features(bad, ["0", "1"], MAX_SEQ, tokenizer, bad_path, "sst-2")
    assert sorted(os.listdir(tmp_path)) == ["sst-2_eval.tf_record", "sts-b_eval.tf_record"]
    with pytest.raises(ValueError, match="sequence length 32, but `max_seq_length` is 16"):
        glue.ensure_cached_features(sst, ["0", "1"], 16, tokenizer, sst_path, "sst-2")
    with pytest.raises(ValueError, match="hold 8 records for 5 examples"):
        glue.ensure_cached_features(sst[:5], ["0", "1"], MAX_SEQ, tokenizer, sst_path, "sst-2", check_count=True)
    glue.ensure_cached_features(glue.pad_examples(sst[:5], 4), ["0", "1"], MAX_SEQ, tokenizer, sst_path, "sst-2",
                                check_count=True)  # a matching cache is reused


# --- Metrics ---------------------------------------------------------------------------------------------

def test_metrics_equal_hand_computations():
    labels = [1, 0, 1, 1, 0, 0, 1, 0]
    preds = [1, 0, 0, 1, 1, 0, 1, 1]
    # tp=3 (0,3,6), tn=2 (1,5), fp=2 (4,7), fn=1 (2).
    assert metrics.confusion_counts(labels, preds) == (3, 2, 2, 1)
    assert metrics.accuracy(labels, preds) == 5 / 8
    assert metrics.f1(labels, preds) == pytest.approx(6 / 9)
    assert metrics.matthews_corr(labels, preds) == pytest.approx((3 * 2 - 2 * 1) / math.sqrt(5 * 4 * 4 * 3))
    # Weights drop the last two examples (TPU padding): tp=3, tn=2, fp=1, fn=1 -> acc 5/6.
    w = [1, 1, 1, 1, 1, 1, 0, 0]
    assert metrics.accuracy(labels, preds, w) == pytest.approx(4 / 6)
    assert metrics.matthews_corr(labels, preds, w) == pytest.approx((2 * 2 - 1 * 1) / math.sqrt(3 * 3 * 3 * 3))
    assert metrics.matthews_corr([0, 0, 1], [0, 0, 0]) == 0.0  # undefined -> 0 (div_no_nan)
    assert metrics.f1([0, 0], [0, 0]) == 0.0

    x = [1.0, 2.0, 3.0, 4.0]
    y = [2.0, 4.0, 5.0, 9.0]
    # mean x 2.5, mean y 5; dx = -1.5 -.5 .5 1.5; dy = -3 -1 0 4; cov = 4.5+.5+0+6 = 11; sxx = 5; syy = 26.
    assert metrics.pearson(x, y) == pytest.approx(11 / math.sqrt(5 * 26))
    assert metrics.pearson(x + [100.0], y + [-50.0], [1, 1, 1, 1, 0]) == pytest.approx(11 / math.sqrt(5 * 26))
    assert metrics.spearman(x, y) == pytest.approx(1.0)
    # Ties: ranks of [1, 2, 2, 3] are [1, 2.5, 2.5, 4]; of [4, 3, 2, 1] are [4, 3, 2, 1].
    assert metrics.rankdata([1, 2, 2, 3]).tolist() == [1, 2.5, 2.5, 4]
    r1, r2 = np.array([1, 2.5, 2.5, 4]), np.array([4.0, 3, 2, 1])
    d1, d2 = r1 - r1.mean(), r2 - r2.mean()
    assert metrics.spearman([1, 2, 2, 3], [4, 3, 2, 1]) == pytest.approx(
        (d1 * d2).sum() / math.sqrt((d1 ** 2).sum() * (d2 ** 2).sum()))
    assert metrics.mean_squared_error([1.0, 2.0], [2.0, 4.0]) == 2.5
    assert metrics.weighted_mean([1.0, 3.0, 100.0], [1, 1, 0]) == 2.0


# --- Model -----------------------------------------------------------------------------------------------

def test_classifier_model_outputs_loss_and_regression(model_files):
    config = model_files["config"]
    model = AlbertClassifier(config, num_labels=3)
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(5, config.vocab_size, [4, 10]), tf.int32)
    inputs = {"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)}
    out = model(inputs, training=False)
    pooled = model.encoder(inputs, training=False)["pooled_output"].numpy()
    w = model.classifier_head.output_weights.numpy()
    b = model.classifier_head.output_bias.numpy()
    assert w.shape == (3, 32) and b.shape == (3,)
    logits = pooled @ w.T + b
    np.testing.assert_allclose(out["logits"].numpy(), logits, rtol=1e-5, atol=1e-6)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    np.testing.assert_allclose(out["probabilities"].numpy(), probs, rtol=1e-5, atol=1e-6)
    assert out["predictions"].numpy().tolist() == probs.argmax(-1).tolist()
    # Dropout in training only, and the config round trip: tests/models/test_heads.py (the harness).

    labels = np.array([0, 2, 1, 1])
    loss = classifier_loss(out, tf.constant(labels), 3).numpy()
    np.testing.assert_allclose(loss, -np.log(probs[np.arange(4), labels]), rtol=1e-5)

    reg = AlbertClassifier(encoder=model.encoder, num_labels=1)
    out = reg(inputs, training=False)
    assert out["logits"].shape == (4,) and out["probabilities"].shape == (4, 1)
    value = pooled @ reg.classifier_head.output_weights.numpy().T + reg.classifier_head.output_bias.numpy()
    np.testing.assert_allclose(out["predictions"].numpy(), value[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(classifier_loss(out, tf.constant([1.0, 0.0, 2.0, -1.0]), 1).numpy(),
                               (value[:, 0] - [1.0, 0.0, 2.0, -1.0]) ** 2, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="`num_labels`"):
        AlbertClassifier(config, num_labels=0)


# --- run_classifier end to end ---------------------------------------------------------------------------

def _read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quotechar=None))


def _read_key_values(path):
    """`key = value` lines of eval_results.txt, as a list of dicts split at the `=====` lines."""
    blocks, current = [], {}
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("====="):
                blocks.append(current)
                current = {}
            else:
                key, value = line.split(" = ")
                current[key] = float(value)
    if current:
        blocks.append(current)
    return blocks


def _run(task, glue_root, model_files, output_dir, **kwargs):
    args = dict(albert_config_file=model_files["config_file"], spm_model_file=model_files["spm"],
                max_seq_length=MAX_SEQ, train_batch_size=16, eval_batch_size=16, predict_batch_size=4,
                learning_rate=1e-3, warmup_step=10)
    args.update(kwargs)
    return run_classifier(task, glue_root, str(output_dir), **args)


@pytest.mark.e2e
def test_sst2_learns_and_writes_every_output_file(glue_root, model_files, tmp_path):
    tf.keras.utils.set_random_seed(20261129)  # Initialisation, dropout and the shuffle: no flaky threshold.
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = _run("SST-2", glue_root, model_files, out, cached_dir=str(cache), do_train=True, do_eval=True,
                  do_predict=True, train_step=150, save_checkpoints_steps=50, export_dir=str(tmp_path / "export"),
                  threshold_to_export=0.25)
    assert sorted(os.listdir(cache)) == ["sst-2_eval.tf_record", "sst-2_predict.tf_record", "sst-2_train.tf_record"]
    # A sentiment word among fillers decides the label: far above the 50% of chance on 48 dev examples.
    assert result["eval"]["eval_accuracy"] >= 0.85, result

    blocks = _read_key_values(out / "eval_results.txt")
    assert [b["global_step"] for b in blocks] == [50, 100, 150]
    for block in blocks:
        assert {"eval_accuracy", "eval_loss", "loss", "global_step", "best"} <= set(block)
    last, best_step, best_value = (out / "best_trial.txt").read_text().split(":")
    assert int(last) == 150 and int(best_step) == result["eval"]["best_step"]
    assert float(best_value) == pytest.approx(max(b["eval_accuracy"] for b in blocks))
    files = os.listdir(out)
    assert "model.ckpt-best.index" in files
    # Non-best checkpoints are pruned as the original does (the latest is kept too).
    kept = sorted(int(f[len("model.ckpt-"):-len(".index")]) for f in files
                  if f.startswith("model.ckpt-") and f.endswith(".index") and "best" not in f)
    assert kept == sorted({int(best_step), 150})

    test_rows = _read_tsv(out / "test_results.tsv")
    assert len(test_rows) == 10
    for row in test_rows:
        assert len(row) == 2 and sum(float(p) for p in row) == pytest.approx(1.0, abs=1e-5)
    submit = _read_tsv(out / "submit_results.tsv")
    assert submit[0] == ["index", "prediction"]
    assert [r[0] for r in submit[1:]] == [str(i) for i in range(10)]
    assert {r[1] for r in submit[1:]} <= {"0", "1"}
    # Test sentences follow the same rule: the predictions match it.
    truth = [r[1] for r in sentiment_rows(3, 10)]
    assert sum(r[1] == t for r, t in zip(submit[1:], truth)) >= 8
    assert (out / "SST-2.tsv").read_text() == (out / "submit_results.tsv").read_text()
    probs = np.array([[float(p) for p in r] for r in test_rows])
    assert [str(i) for i in probs.argmax(1)] == [r[1] for r in submit[1:]]

    # --export_dir: a SavedModel of model.ckpt-best that serves the original's serialized tf.Example input.
    assert result["export_path"] == str(tmp_path / "export" / "1")
    loaded = tf.saved_model.load(result["export_path"])
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(cache / "sst-2_predict.tf_record"))]
    served = loaded.signatures["serve_examples"](examples=tf.constant(records))
    np.testing.assert_allclose(served["probabilities"].numpy(), probs, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(served["threshold"].numpy(), [0.25] * 10)
    # And through TF Serving's session loader (the graph has serve_text: its ops must be registered first).
    import tensorflow_text  # noqa: F401
    from albert_tf.export.session_model import SessionModel

    with SessionModel(result["export_path"]) as session:
        np.testing.assert_allclose(session.run("serve_examples", examples=records)["probabilities"], probs,
                                   rtol=1e-4, atol=1e-6)


@pytest.mark.e2e
def test_stsb_regression_runs(glue_root, model_files, tmp_path):
    out = tmp_path / "out"
    result = _run("sts-b", glue_root, model_files, out, do_train=True, do_eval=True, do_predict=True,
                  train_step=20, save_checkpoints_steps=20)
    assert {"pearson", "spearman", "MSE", "eval_loss", "global_step"} <= set(result["eval"])
    assert "eval_accuracy" not in result["eval"]  # as the original's STS-B metric_fn
    assert -1.0 <= result["eval"]["pearson"] <= 1.0 and result["eval"]["MSE"] >= 0
    assert (out / "best_trial.txt").read_text().startswith("20:20:")
    assert "label_ids" in glue.read_features(str(out / "sts-b_train.tf_record"), MAX_SEQ, "sts-b")
    rows = _read_tsv(out / "test_results.tsv")
    assert len(rows) == 5 and all(len(r) == 1 for r in rows)
    submit = _read_tsv(out / "STS-B.tsv")
    assert submit[0] == ["index", "prediction"] and len(submit) == 6
    for row, prob in zip(submit[1:], rows):
        assert float(row[1]) == pytest.approx(float(prob[0]), rel=1e-6)


def test_bad_input_gives_clear_errors_and_leaves_no_cache(glue_root, model_files, tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="sequence length 128 .* up to sequence length 64"):
        _run("sst-2", glue_root, model_files, tmp_path / "o1", cached_dir=str(cache), do_train=True,
             max_seq_length=128)
    assert not cache.exists() or os.listdir(cache) == []
    with pytest.raises(ValueError, match="Task not found"):
        _run("boolq", glue_root, model_files, tmp_path / "o2", do_train=True)
    with pytest.raises(ValueError, match="At least one of `do_train`"):
        _run("rte", glue_root, model_files, tmp_path / "o3")
    with pytest.raises(ValueError, match="`albert_config_file`"):
        run_classifier("rte", glue_root, str(tmp_path / "o4"), do_train=True, spm_model_file=model_files["spm"])
    with pytest.raises(ValueError, match="Task directory .*CoLA"):
        _run("cola", str(tmp_path), model_files, tmp_path / "o5", do_train=True)

    bad_root = tmp_path / "bad"
    write_cola(str(bad_root), sentiment_rows(4, 8) + [("A sentence .", "2")], sentiment_rows(5, 2), [])
    with pytest.raises(ValueError, match=r"CoLA/train\.tsv:9: unknown label '2'"):
        _run("cola", str(bad_root), model_files, tmp_path / "o6", cached_dir=str(cache), do_train=True,
             train_step=1)
    assert not cache.exists() or os.listdir(cache) == []


def test_hparams_presets_are_run_glue_sh():
    assert hparams_preset("albert", "RTE") == dict(learning_rate=3e-5, train_batch_size=32, train_step=800,
                                                   warmup_step=200, save_checkpoints_steps=100,
                                                   max_seq_length=512, optimizer="adamw", do_lower_case=True)
    assert hparams_preset("albert", "mnli")["train_batch_size"] == 128
    assert hparams_preset("albert", "qnli")["save_checkpoints_steps"] == 200
    assert hparams_preset("albert", "cola")["train_step"] == 5336
    with pytest.raises(ValueError, match="no values for `task_name` 'ax'"):
        hparams_preset("albert", "ax")


@pytest.mark.e2e
def test_cli_mnli_then_rte_and_ax_from_the_mnli_run(glue_root, model_files, tmp_path):
    """The CLI (MNLI, 3 labels) with a preset overridden by explicit flags; RTE (2 labels) initialised from the
    MNLI run (encoder loaded, head skipped); the AX diagnostic predicted with the MNLI model."""

    mnli_out = tmp_path / "mnli"
    cmd = [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=MNLI", f"--data_dir={glue_root}",
           f"--output_dir={mnli_out}", f"--albert_config_file={model_files['config_file']}",
           f"--spm_model_file={model_files['spm']}", "--hparams_preset=albert", f"--max_seq_length={MAX_SEQ}",
           "--train_batch_size=4", "--train_step=2", "--warmup_step=1", "--save_checkpoints_steps=2",
           "--do_train", "--do_eval", "--do_predict"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The preset's MNLI learning rate and optimizer; the explicit flags win over its batch size and steps.
    assert "learning_rate = 3e-05, train_batch_size = 4, train_step = 2, warmup_step = 1" in proc.stderr
    submit = _read_tsv(mnli_out / "MNLI-m.tsv")
    assert submit[0] == ["index", "prediction"] and [r[0] for r in submit[1:]] == ["0", "1", "2"]
    assert {r[1] for r in submit[1:]} <= {"contradiction", "entailment", "neutral"}
    assert all(len(r) == 3 for r in _read_tsv(mnli_out / "test_results.tsv"))
    assert _read_key_values(mnli_out / "eval_results.txt")[0]["global_step"] == 2

    best = str(mnli_out / "model.ckpt-best")
    assert source_num_labels(best) == 3
    mnli_model = AlbertClassifier(model_files["config"], num_labels=3)
    restore_checkpoint(mnli_model, best)
    rte_model = AlbertClassifier(model_files["config"], num_labels=2)
    head_before = rte_model.classifier_head.output_weights.numpy()
    classifier_task.init_classifier(rte_model, best)
    for a, b in zip(mnli_model.encoder.weights, rte_model.encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(rte_model.classifier_head.output_weights.numpy(), head_before)

    rte_out = tmp_path / "rte"
    result = _run("rte", glue_root, model_files, rte_out, init_checkpoint=best, do_train=True, do_predict=True,
                  train_batch_size=2, train_step=1, save_checkpoints_steps=1)
    assert _read_tsv(rte_out / "RTE.tsv")[1:] and {r[1] for r in _read_tsv(rte_out / "RTE.tsv")[1:]} <= {
        "entailment", "not_entailment"}
    assert "predict_files" in result

    _run("ax", glue_root, model_files, mnli_out, do_predict=True)
    ax = _read_tsv(mnli_out / "AX.tsv")
    assert ax[0] == ["index", "prediction"] and [r[0] for r in ax[1:]] == ["0", "1"]


def test_hub_module_and_google_format_checkpoints_as_init(glue_root, model_files, tmp_path, caplog):
    """A local TF-Hub TF1 module (config and spm model from its assets, `--spm_model_file=from_tf_hub`), and a
    Google-format (TF1 names) fine-tuned 3-label classifier used for a 2-label task: encoder loaded, head
    skipped."""

    config = model_files["config"]
    encoder = AlbertModel(config)
    hub = tmp_path / "hub"
    save_tf1_checkpoint(encoder, str(hub / "variables" / "variables"))
    (hub / "assets").mkdir()
    config.to_json_file(str(hub / "assets" / "albert_config.json"))
    with open(model_files["spm"], "rb") as f:
        (hub / "assets" / "30k-clean.model").write_bytes(f.read())
    (hub / "tfhub_module.pb").write_bytes(b"")

    model = AlbertClassifier(config, num_labels=2)
    classifier_task.init_classifier(model, str(hub))
    for a, b in zip(encoder.weights, model.encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    out = tmp_path / "out"

    with caplog.at_level("WARNING"):
        run_classifier("rte", glue_root, str(out), albert_hub_module_handle=str(hub), spm_model_file="from_tf_hub",
                       max_seq_length=MAX_SEQ, do_predict=True)
    assert "using `init_checkpoint`" in caplog.text
    rows = _read_tsv(out / "RTE.tsv")
    assert rows[0] == ["index", "prediction"] and [r[0] for r in rows[1:]] == ["0", "1"]

    mnli_like = AlbertClassifier(encoder=encoder, num_labels=3)
    prefix = save_tf1_checkpoint(mnli_like, str(tmp_path / "google" / "model.ckpt-best"))
    assert source_num_labels(prefix) == 3
    target = AlbertClassifier(config, num_labels=2)
    head = target.classifier_head.output_weights.numpy()
    classifier_task.init_classifier(target, prefix)
    np.testing.assert_array_equal(target.classifier_head.output_weights.numpy(), head)
    np.testing.assert_array_equal(target.encoder.embeddings.word_embeddings.numpy(),
                                  encoder.embeddings.word_embeddings.numpy())
    same = AlbertClassifier(config, num_labels=3)
    classifier_task.init_classifier(same, prefix)
    np.testing.assert_array_equal(same.classifier_head.output_weights.numpy(),
                                  mnli_like.classifier_head.output_weights.numpy())


# --- checkpoints the original code left in output_dir; bad inputs stopped before any work ---------------------


def _built(model, seq=8):
    ids = tf.ones([1, seq], tf.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)}, training=False)
    return model


@pytest.mark.e2e
def test_original_checkpoints_in_output_dir_evaluate_and_predict_the_same(glue_root, model_files, tmp_path):
    tf.keras.utils.set_random_seed(7)
    model = _built(AlbertClassifier(model_files["config"], num_labels=2))
    ours, original = tmp_path / "ours", tmp_path / "original"
    oc.save_our_checkpoint(model, str(ours / "model.ckpt-300"))
    oc.save_original_checkpoint(model, str(original / "model.ckpt-300"))
    assert "output_weights/adam_m" in dict(tf.train.list_variables(str(original / "model.ckpt-300")))
    for out in (ours, original):
        _run("rte", glue_root, model_files, out, do_eval=True, do_predict=True)
    expected = oc.files_with_text(str(ours))
    assert set(expected) >= {"eval_results.txt", "best_trial.txt", "test_results.tsv", "submit_results.tsv",
                             "RTE.tsv"}
    assert oc.files_with_text(str(original)) == expected
    assert (original / "model.ckpt-best.index").exists()

    # A model.ckpt-best of the original's LAMB run, predicted alone.
    best_only = tmp_path / "best_only"
    oc.save_original_checkpoint(model, str(best_only / "model.ckpt-best"), slots=("lamb_m", "lamb_v"))
    _run("rte", glue_root, model_files, best_only, do_predict=True)
    for name in ("test_results.tsv", "submit_results.tsv", "RTE.tsv"):
        assert (best_only / name).read_text() == expected[name]


def test_checkpoint_of_another_model_gives_a_short_error(glue_root, model_files, tmp_path):
    squad_dir = tmp_path / "squad"
    prefix = oc.save_original_checkpoint(_built(AlbertSquadV1(model_files["config"])),
                                         str(squad_dir / "model.ckpt-best"))
    with pytest.raises(ValueError) as error:
        _run("rte", glue_root, model_files, squad_dir, do_predict=True)
    oc.assert_short_error(str(error.value), prefix)
    assert "missing from the checkpoint" in str(error.value) and "output_weights" in str(error.value)

    three = tmp_path / "three_labels"
    prefix = oc.save_our_checkpoint(_built(AlbertClassifier(model_files["config"], num_labels=3)),
                                    str(three / "model.ckpt-best"))
    with pytest.raises(ValueError) as error:
        _run("rte", glue_root, model_files, three, do_predict=True)
    oc.assert_short_error(str(error.value), prefix)


def test_vocab_mismatch_and_damaged_checkpoint_stop_before_any_work(glue_root, model_files, tmp_path):
    pieces = spm.SentencePieceProcessor(model_file=model_files["spm"]).get_piece_size()
    config_file = tmp_path / "big_albert_config.json"
    AlbertConfig.from_dict(dict(model_files["config"].to_dict(), vocab_size=1000)).to_json_file(str(config_file))
    out = tmp_path / "out"
    with pytest.raises(ValueError) as error:
        _run("rte", glue_root, model_files, out, albert_config_file=str(config_file), do_train=True, do_eval=True)
    message = str(error.value)
    assert model_files["spm"] in message and str(config_file) in message
    assert f"{pieces} pieces" in message and "is 1000" in message
    assert not out.exists()

    damaged = tmp_path / "damaged"
    prefix = oc.save_original_checkpoint(_built(AlbertClassifier(model_files["config"], num_labels=2)),
                                         str(damaged / "model.ckpt-best"))
    oc.truncate_data(prefix)
    before = sorted(os.listdir(damaged))
    with pytest.raises(ValueError, match="is damaged") as error:
        _run("rte", glue_root, model_files, damaged, do_predict=True)
    # The message names the damaged file and says nothing of optimizer slots.
    assert f"`{prefix}.data-00000-of-00001` holds" in str(error.value) and "truncated" in str(error.value)
    assert "slots" not in str(error.value)
    assert sorted(os.listdir(damaged)) == before


@pytest.mark.e2e
def test_random_seed_repeats_a_run(glue_root, model_files, tmp_path):
    """`random_seed` fixes the initialisation, dropout and the shuffle: two runs write the same predictions."""
    texts = []
    for name in ("a", "b"):
        out = tmp_path / name
        tf.keras.utils.set_random_seed(len(texts) + 100)   # other global state before each run
        _run("rte", glue_root, model_files, out, do_train=True, do_predict=True, train_step=4,
             save_checkpoints_steps=4, random_seed=1234)
        texts.append((out / "test_results.tsv").read_text())
    assert texts[0] == texts[1]


@pytest.mark.parametrize("recompute", [False, True])
def test_recompute_reaches_the_model_only_when_set(glue_root, model_files, tmp_path, monkeypatch, recompute):
    seen = recording(monkeypatch, classifier_task, "AlbertClassifier")
    with pytest.raises(Built):
        _run("rte", glue_root, model_files, tmp_path / "out", do_train=True, recompute=recompute)
    assert ("recompute" in seen[0]) == recompute and seen[0].get("recompute", True) is True
