"""RACE: reader (both file forms), encoding, TFRecords, `AlbertRace`, metrics, `run_race` end to end, CLI."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.data import features as features_lib
from albert_tf.tasks.race import data as race_data
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.race.model import AlbertRace, race_loss
from albert_tf.tasks.race import task as race_task
from albert_tf.tasks.race.task import run_race
import original_checkpoints as oc
from fresh_process import same_cpu_backend
from recording import Built, recording
from race_fixtures import MAX_QA, MAX_SEQ, make_articles
from race_fixtures import workdir  # noqa: F401  (fixtures)
from repo_paths import REPO


class WhitespaceTokenizer:
    """A transparent tokenizer for the encoding rules: tokens are words, ids are their index in a table."""

    def __init__(self):
        self.vocab = {"[PAD]": 0, "[CLS]": 2, "[SEP]": 3}

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.setdefault(t, len(self.vocab) + 10) for t in tokens]


def identity(text):
    return text


# --- Reading ---------------------------------------------------------------------------------------------


def test_both_file_forms_read_the_same_examples(workdir):
    a = race_data.read_race_examples(str(workdir["root"] / "all_form"), "train", process_text=identity)
    b = race_data.read_race_examples(str(workdir["root"] / "article_form"), "train", process_text=identity)
    assert len(a) == 24
    strip = lambda e: (e.example_id, e.level, e.context, e.endings, e.label)  # noqa: E731
    assert [strip(e) for e in a] == [strip(e) for e in b]
    assert [e.level for e in a] == ["middle"] * 12 + ["high"] * 12      # the original's level order
    # The RACE directory itself is accepted as data_dir as well.
    c = race_data.read_race_examples(str(workdir["root"] / "all_form" / "RACE"), "dev", process_text=identity)
    assert len(c) == 12


def test_level_filters(workdir):
    data_dir = str(workdir["root"] / "all_form")
    high = race_data.read_race_examples(data_dir, "dev", high_only=True, process_text=identity)
    middle = race_data.read_race_examples(data_dir, "dev", middle_only=True, process_text=identity)
    assert {e.level for e in high} == {"high"} and len(high) == 8
    assert {e.level for e in middle} == {"middle"} and len(middle) == 4
    with pytest.raises(ValueError, match="high_only"):
        race_data.read_race_examples(data_dir, "dev", high_only=True, middle_only=True)


def test_question_option_joining_and_labels():
    obj = {"id": "x.txt", "article": "  An   Old  Article ",
           "questions": ["The cat sat on the _ .", "Which is Right?"],
           "options": [["mat", "Hat", "bat", "rat"], ["One", "two", "three", "four"]], "answers": ["A", "D"]}
    lower = race_data.make_process_text(do_lower_case=True)
    examples = race_data.examples_from_object(obj, "f.txt", "high", lower)
    assert examples[0].context == "an old article"
    assert examples[0].endings == ("the cat sat on the mat .", "the cat sat on the hat .",
                                   "the cat sat on the bat .", "the cat sat on the rat .")
    assert examples[1].endings == ("which is right? one", "which is right? two", "which is right? three",
                                   "which is right? four")
    assert [e.label for e in examples] == [0, 3]
    assert [e.example_id for e in examples] == ["x.txt-0", "x.txt-1"]
    cased = race_data.examples_from_object(obj, "f.txt", "high", race_data.make_process_text(False))
    assert cased[1].endings[0] == "Which is Right? One"


@pytest.mark.parametrize("change, message", [
    ({"answers": ["E"]}, r"bad\.txt`, question 0: the answer must be one of A, B, C, D\. Received: 'E'"),
    ({"options": [["a", "b", "c"]]}, r"bad\.txt`, question 0: expected exactly 4 string options"),
    ({"answers": ["A", "B"]}, r"bad\.txt`: `answers` must be a list with one letter per question"),
    ({"article": None}, None),
])
def test_bad_objects_name_the_file(change, message):
    obj = {"id": "bad.txt", "article": "text", "questions": ["q?"], "options": [["a", "b", "c", "d"]],
           "answers": ["A"]}
    obj.update(change)
    obj = {k: v for k, v in obj.items() if v is not None}
    with pytest.raises(ValueError, match=message or r"bad\.txt` has no `article` field"):
        race_data.examples_from_object(obj, "dir/bad.txt", "high", identity)


def test_bad_files_and_directories_name_the_path(tmp_path):
    level = tmp_path / "RACE" / "dev" / "middle"
    level.mkdir(parents=True)
    (tmp_path / "RACE" / "dev" / "high").mkdir()
    with pytest.raises(ValueError, match=r"RACE level directory `.*dev/middle` holds no `\.txt` files"):
        race_data.read_race_examples(str(tmp_path), "dev", process_text=identity)
    good = {"id": "1", "article": "a", "questions": ["q"], "options": [["a", "b", "c", "d"]], "answers": ["B"]}
    bad = dict(good, answers=["F"])
    (level / "all.txt").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"dev/middle/all\.txt:2`, question 0: the answer must be one of"):
        race_data.read_race_examples(str(tmp_path), "dev", process_text=identity)
    (level / "all.txt").write_text(json.dumps(good) + "\n{broken\n")
    with pytest.raises(ValueError, match=r"all\.txt:2` is not valid JSON"):
        race_data.read_race_examples(str(tmp_path), "dev", process_text=identity)
    with pytest.raises(ValueError, match=r"RACE dev directory not found: expected `.*nowhere/RACE/dev`"):
        race_data.read_race_examples(str(tmp_path / "nowhere"), "dev", process_text=identity)
    # Prediction data may lack answers; training/eval data may not.
    (level / "all.txt").write_text(json.dumps({k: v for k, v in good.items() if k != "answers"}) + "\n")
    (tmp_path / "RACE" / "dev" / "high" / "all.txt").write_text(json.dumps(good) + "\n")
    with pytest.raises(ValueError, match=r"all\.txt` has no `answers` field"):
        race_data.read_race_examples(str(tmp_path), "dev", process_text=identity)
    examples = race_data.read_race_examples(str(tmp_path), "dev", process_text=identity, require_answers=False)
    assert [e.label for e in examples] == [None, 1]


def test_json_array_files_and_missing_ids(tmp_path):
    for level in race_data.LEVELS:
        (tmp_path / "RACE" / "test" / level).mkdir(parents=True)
    art = {"article": "a", "questions": ["q"], "options": [["a", "b", "c", "d"]], "answers": ["C"]}
    (tmp_path / "RACE" / "test" / "middle" / "7.txt").write_text(json.dumps([art, dict(art, id="m2")]))
    (tmp_path / "RACE" / "test" / "high" / "all.txt").write_text(json.dumps(art) + "\n\n" + json.dumps(art))
    examples = race_data.read_race_examples(str(tmp_path), "test", process_text=identity)
    assert [e.example_id for e in examples] == ["7.txt[0]-0", "m2-0", "all.txt:1-0", "all.txt:3-0"]
    assert [e.label for e in examples] == [2] * 4


# --- Encoding and TFRecords ------------------------------------------------------------------------------


def test_encoding_keeps_last_qa_tokens_and_truncates_the_article():
    tok = WhitespaceTokenizer()
    context = " ".join(f"c{i}" for i in range(20))
    endings = (" ".join(f"q{i}" for i in range(8)), "short a", "short b", "x " * 3)
    example = race_data.RaceExample("e-0", "e", 0, "high", context, endings, 2, "f")
    ids, mask, segments, tokens = race_data.encode_example(example, tok, max_seq_length=16, max_qa_length=5)
    # Choice 0: the ending keeps its LAST 5 tokens; the article keeps 16 - 3 - 5 = 8 tokens.
    assert tokens[0] == (["[CLS]"] + [f"c{i}" for i in range(8)] + ["[SEP]"] + [f"q{i}" for i in range(3, 8)]
                         + ["[SEP]"])
    assert segments[0] == [0] * 10 + [1] * 6
    assert mask[0] == [1] * 16
    # Choice 1: a 2-token ending leaves 11 article tokens, no padding needed... 1 + 11 + 1 + 2 + 1 = 16.
    assert tokens[1][:13] == ["[CLS]"] + [f"c{i}" for i in range(11)] + ["[SEP]"]
    # Short article: zero padding, segment 0 on the padding.
    example = race_data.RaceExample("e-1", "e", 1, "high", "c0 c1", ("a b",) * 4, 0, "f")
    ids, mask, segments, tokens = race_data.encode_example(example, tok, 16, 5)
    assert tokens[0] == ["[CLS]", "c0", "c1", "[SEP]", "a", "b", "[SEP]"]
    assert mask[0] == [1] * 7 + [0] * 9
    assert segments[0] == [0, 0, 0, 0, 1, 1, 1] + [0] * 9
    assert ids[0][:7] == tok.convert_tokens_to_ids(tokens[0]) and ids[0][7:] == [0] * 9
    assert ids[0][0] == 2 and ids[0][3] == 3
    with pytest.raises(ValueError, match="max_qa_length"):
        race_data.write_race_tfrecord([example], tok, 16, 14, "/tmp/never.tf_record")


def test_tfrecord_has_the_original_layout_and_the_dataset_reshapes(tmp_path):
    tok = WhitespaceTokenizer()
    examples = [race_data.RaceExample(f"e-{i}", "e", i, "middle", f"c{i} d{i}", (f"o{i} a", "b", "c", "d"),
                                      i % 4, "f") for i in range(5)]
    examples.append(examples[0]._replace(label=None))
    path = str(tmp_path / "eval.tf_record")
    assert race_data.write_race_tfrecord(examples, tok, 8, 4, path, num_padding=2) == 8
    assert sorted(os.listdir(tmp_path)) == ["eval.tf_record"]          # no temporary file left behind
    records = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]
    assert len(records) == 8
    spec = features_lib.parse_spec(race_data.RACE, choices_seq=32)
    assert set(records[0].features.feature) == set(spec)
    flat = records[1].features.feature["input_ids"].int64_list.value
    expected, _, _, _ = race_data.encode_example(examples[1], tok, 8, 4)
    assert list(flat) == sum(expected, [])                              # choices concatenated, 4 * 8
    assert records[5].features.feature["label_ids"].int64_list.value == [race_data.NO_LABEL]
    assert records[7].features.feature["is_real_example"].int64_list.value == [0]
    batch = next(iter(race_data.race_dataset(path, 8, 3, is_training=False)))
    assert batch["input_ids"].shape == (3, 4, 8) and batch["input_ids"].dtype == tf.int32
    np.testing.assert_array_equal(batch["input_ids"][1].numpy(), np.array(expected))
    np.testing.assert_array_equal(batch["label_ids"].numpy(), [0, 1, 2])
    train = race_data.race_dataset(path, 8, 4, is_training=True, drop_remainder=True)
    assert [b["label_ids"].shape[0] for b in train.take(5)] == [4] * 5    # repeats forever


# --- Model -----------------------------------------------------------------------------------------------


def test_model_scores_each_choice_with_the_shared_head(workdir):
    tf.keras.utils.set_random_seed(0)
    model = AlbertRace(workdir["config"], dropout_prob=0.1)
    assert isinstance(model.encoder, AlbertModel)
    assert model.race_head.output_weights.shape == (1, 32) and model.race_head.output_bias.shape == (1,)
    model.race_head.output_bias.assign([0.25])
    rng = np.random.default_rng(0)
    ids = rng.integers(5, workdir["config"].vocab_size, size=(3, 4, 10)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[:, :, 7:] = 0
    seg = np.zeros_like(ids)
    seg[:, :, 4:7] = 1
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": seg}
    out = model(inputs, training=False)
    assert out["logits"].shape == (3, 4) and out["logits"].dtype == tf.float32
    # Reference: each (question, choice) pair encoded on its own, scored by pooled @ w^T + b.
    w, b = model.race_head.output_weights.numpy(), model.race_head.output_bias.numpy()
    for q in range(3):
        for c in range(4):
            pooled = model.encoder({k: v[q, c][None] for k, v in inputs.items()})["pooled_output"].numpy()
            np.testing.assert_allclose(out["logits"][q, c], (pooled @ w.T + b)[0, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(out["predictions"].numpy(), out["logits"].numpy().argmax(-1))
    # Dropout in training only, and the config round trip: tests/models/test_heads.py (the harness).
    with pytest.raises(ValueError, match=r"\[batch, choices, seq\]` \(RACE: 4 choices\)"):
        model({"input_ids": ids.reshape(3, 40)})
    # Any number of choices, as transformers' AlbertForMultipleChoice: each scored alone by the same head.
    three = model({k: v[:, :3] for k, v in inputs.items()}, training=False)
    assert three["logits"].shape == (3, 3)
    np.testing.assert_allclose(three["logits"].numpy(), out["logits"].numpy()[:, :3], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="dropout_prob"):
        AlbertRace(workdir["config"], dropout_prob=1.0)


def test_loss_is_softmax_cross_entropy():
    logits = np.array([[1.0, 2.0, 0.5, -1.0], [0.0, 0.0, 3.0, 1.0]], np.float32)
    labels = np.array([1, 3])
    loss, per_example = race_loss(logits, labels)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    expected = -log_probs[np.arange(2), labels]
    np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(loss.numpy(), expected.mean(), rtol=1e-6)


def test_accuracy_by_level_combines_to_overall():
    predictions = [0, 1, 2, 3, 0, 1, 2]
    labels = [0, 1, 0, 3, 1, race_data.NO_LABEL, 2]
    levels = ["middle", "middle", "middle", "high", "high", "high", "high"]
    losses = [0.1, 0.2, 0.3, 0.4, 0.5, 9.0, 0.6]
    m = race_data.accuracy_by_level(predictions, labels, levels, losses)
    assert (m["num_examples_middle"], m["num_examples_high"], m["num_examples"]) == (3, 3, 6)
    assert m["eval_accuracy_middle"] == pytest.approx(2 / 3) and m["eval_accuracy_high"] == pytest.approx(2 / 3)
    assert m["eval_accuracy"] == pytest.approx(4 / 6)
    assert m["eval_loss"] == pytest.approx(np.mean([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))
    assert m["eval_loss_high"] == pytest.approx(0.5)


# --- run_race end to end ---------------------------------------------------------------------------------


def _read_blocks(path):
    """`key = value` lines of a results file as a dict (the last value of each key wins)."""
    values = {}
    for line in open(path):
        if " = " in line:
            key, value = line.strip().split(" = ", 1)
            values[key] = value
    return values


@pytest.fixture(scope="module")
def trained(workdir):
    tf.keras.utils.set_random_seed(1)
    out = str(workdir["root"] / "out")
    results = run_race(
        data_dir=str(workdir["root"] / "article_form"), output_dir=out, albert_config_file=workdir["config_file"],
        spm_model_file=workdir["spm"], max_seq_length=MAX_SEQ, max_qa_length=MAX_QA, train_batch_size=8,
        eval_batch_size=5, predict_batch_size=3, learning_rate=2e-3, train_step=60, warmup_step=6,
        save_checkpoints_steps=30, iterations_per_loop=10, do_predict=True)
    return out, results


@pytest.mark.e2e
def test_run_race_trains_evaluates_and_predicts(trained):
    out, results = trained
    files = set(os.listdir(out))
    assert {"train.tf_record", "eval.tf_record", "predict.tf_record", "eval_results.txt", "best_trial.txt",
            "predict_results.txt", "predictions.tsv", "model.ckpt-best.index"} <= files
    assert not [f for f in files if ".tmp" in f]
    # The memorisable rule is learnt: dev accuracy (other articles, same rule) is high.
    best = results["eval"]
    assert best["eval_accuracy"] >= 0.9, best
    # Per-level accuracies combine to the overall one, weighted by the question counts.
    assert (best["num_examples_middle"], best["num_examples_high"]) == (4, 8)
    combined = (best["eval_accuracy_middle"] * 4 + best["eval_accuracy_high"] * 8) / 12
    assert best["eval_accuracy"] == pytest.approx(combined)
    written = _read_blocks(os.path.join(out, "eval_results.txt"))
    for key in ("eval_accuracy", "eval_accuracy_middle", "eval_accuracy_high", "eval_loss"):
        assert key in written, written
    # Prediction: middle has answers (4 questions), high has none (4 questions).
    predicted = _read_blocks(os.path.join(out, "predict_results.txt"))
    assert open(os.path.join(out, "predict_results.txt")).readline().strip() == "***** Predict results *****"
    assert predicted["num_questions"] == "8" and predicted["num_examples"] == "4"
    assert int(predicted["global_step"]) == best["best_step"] == best["global_step"]
    assert float(predicted["eval_accuracy"]) >= 0.75
    assert "eval_accuracy_high" not in predicted and float(predicted["best"]) == best["eval_accuracy"]
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(out, "predictions.tsv"))]
    assert rows[0] == ["id", "level", "prediction", "answer", "prob_A", "prob_B", "prob_C", "prob_D"]
    assert len(rows) == 9 and [r[1] for r in rows[1:]] == ["middle"] * 4 + ["high"] * 4
    for row in rows[1:]:
        probs = [float(p) for p in row[4:]]
        assert sum(probs) == pytest.approx(1.0, abs=1e-4)
        assert row[2] == "ABCD"[int(np.argmax(probs))]
    assert [r[3] for r in rows[5:]] == [""] * 4 and all(r[3] in "ABCD" for r in rows[1:5])
    # Ids name the article and the question.
    assert rows[1][0] == "5-0.txt-0" and rows[2][0] == "5-0.txt-1"


@pytest.mark.e2e
def test_cached_features_must_match_the_request(trained, workdir):
    out, _ = trained
    common = dict(data_dir=str(workdir["root"] / "all_form"), output_dir=out,
                  albert_config_file=workdir["config_file"], spm_model_file=workdir["spm"], max_qa_length=MAX_QA,
                  do_train=False)
    with pytest.raises(ValueError, match=r"eval\.tf_record` holds 12 records but the data has 8 questions"):
        run_race(max_seq_length=MAX_SEQ, high_only=True, **common)
    with pytest.raises(ValueError, match=r"eval\.tf_record` holds `input_ids` of length 128, expected"):
        run_race(max_seq_length=MAX_SEQ + 8, **common)
    with pytest.raises(ValueError, match="max_qa_length"):
        run_race(max_seq_length=MAX_QA + 2, **common)
    with pytest.raises(ValueError, match="sequence length 128"):
        run_race(max_seq_length=128, **common)


CLI_SCRIPT = r"""
import json, sys
from absl import flags
from albert_tf import commands
from albert_tf.commands import app
from albert_tf.commands import flags as flag_lib
app.quiet_tensorflow_start()
command = commands.find("run_race")
# The command's flags declared apart, for their defaults; `commands.run` declares them again on absl's FLAGS.
FLAGS = flags.FlagValues()
flag_lib.define_flags(command.options, flag_values=FLAGS, no_flag=command.no_flag, only=command.only)
names = ["task_name", "do_lower_case", "dropout_prob", "max_seq_length", "max_qa_length", "num_keep_checkpoint",
         "high_only", "middle_only", "do_train", "do_eval", "do_predict", "train_batch_size", "eval_batch_size",
         "predict_batch_size", "learning_rate", "train_step", "warmup_step", "save_checkpoints_steps",
         "iterations_per_loop", "use_tpu", "num_tpu_cores", "data_dir", "albert_config_file", "spm_model_file",
         "output_dir", "vocab_file", "train_file", "eval_file", "predict_file", "init_checkpoint",
         "albert_hub_module_handle", "tpu_name", "tpu_zone", "gcp_project", "master", "export_dir"]
print("DEFAULTS=" + json.dumps({n: FLAGS[n].default for n in names}))
sys.argv = ["run_race.py"] + sys.argv[1:]
commands.run("run_race")
"""


@pytest.mark.e2e
def test_cli_predicts_from_a_checkpoint_and_exports(trained, workdir, tmp_path):
    out, _ = trained
    args = [f"--data_dir={workdir['root'] / 'all_form'}", f"--albert_config_file={workdir['config_file']}",
            f"--spm_model_file={workdir['spm']}", f"--output_dir={tmp_path / 'cli'}",
            f"--init_checkpoint={out}/model.ckpt-best", "--nodo_train", "--nodo_eval", "--do_predict",
            f"--max_seq_length={MAX_SEQ}", f"--max_qa_length={MAX_QA}", f"--export_dir={tmp_path / 'export'}"]
    # The probabilities are compared with this process's to 1e-5: the runner gets this process's CPU kernels.
    proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT] + args, cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **same_cpu_backend()), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    defaults = json.loads(proc.stdout.split("DEFAULTS=", 1)[1].splitlines()[0])
    assert defaults == {  # the original run_race.py's flags
        "task_name": "race", "do_lower_case": True, "dropout_prob": 0.1, "max_seq_length": 512,
        "max_qa_length": 128, "num_keep_checkpoint": 5, "high_only": False, "middle_only": False,
        "do_train": True, "do_eval": True, "do_predict": False, "train_batch_size": 32, "eval_batch_size": 8,
        "predict_batch_size": 8, "learning_rate": 1e-5, "train_step": 12000, "warmup_step": 1000,
        "save_checkpoints_steps": 100, "iterations_per_loop": 1000, "use_tpu": False, "num_tpu_cores": 8,
        "data_dir": None, "albert_config_file": None, "spm_model_file": None, "output_dir": None,
        "vocab_file": None, "train_file": None, "eval_file": None, "predict_file": None,
        "init_checkpoint": None, "albert_hub_module_handle": None, "tpu_name": None, "tpu_zone": None,
        "gcp_project": None, "master": None, "export_dir": None}
    # Same weights, same data (the other file form): the same predictions as the library run.
    expected = open(os.path.join(out, "predictions.tsv")).read().splitlines()
    got = open(tmp_path / "cli" / "predictions.tsv").read().splitlines()
    assert [r.split("\t")[:4] for r in got] == [r.split("\t")[:4] for r in expected]
    np.testing.assert_allclose([[float(p) for p in r.split("\t")[4:]] for r in got[1:]],
                               [[float(p) for p in r.split("\t")[4:]] for r in expected[1:]], atol=1e-5)
    # The SavedModel's raw-text signature (in-graph tokenization and packing) agrees with this module's
    # Python reading + encoding on the test questions.
    import tensorflow_text  # noqa: F401  (registers the ops of the raw-text signature)

    (version,) = os.listdir(tmp_path / "export")
    serving = tf.saved_model.load(str(tmp_path / "export" / version))
    articles = [obj for seed in (5,) for obj in make_articles(seed, 2)]
    questions = [(a["article"], q, o) for a in articles for q, o in zip(a["questions"], a["options"])]
    text_out = serving.signatures["serve_text"](
        article=tf.constant([q[0] for q in questions]), question=tf.constant([q[1] for q in questions]),
        options=tf.constant([q[2] for q in questions]))
    np.testing.assert_allclose(text_out["probabilities"].numpy(),
                               [[float(p) for p in r.split("\t")[4:]] for r in got[1:5]], atol=1e-5)


@pytest.mark.e2e
def test_release_dir_with_tf1_names_evaluates_and_predicts_the_same(trained, workdir, tmp_path):


    out, results = trained
    model = AlbertRace(workdir["config"])
    restore_checkpoint(model, os.path.join(out, "model.ckpt-best"))
    release = tmp_path / "albert_race_release"
    release.mkdir()
    save_tf1_checkpoint(model, str(release / "model.ckpt-best"))
    names = dict(tf.train.list_variables(str(release / "model.ckpt-best")))
    assert names["output_weights"] == [1, 32] and names["output_bias"] == [1]   # the original's RACE head
    assert "bert/pooler/dense/kernel" in names
    shutil.copy(workdir["config_file"], release / "albert_config.json")
    shutil.copy(workdir["spm"], release / "30k-clean.model")
    # No config or spm given: both come from the release directory; no training: the initial weights are scored.
    got = run_race(data_dir=str(workdir["root"] / "all_form"), output_dir=str(tmp_path / "rel"),
                   init_checkpoint=str(release), do_train=False, do_predict=True, max_seq_length=MAX_SEQ,
                   max_qa_length=MAX_QA, eval_batch_size=4)
    assert got["eval"]["eval_accuracy"] == results["eval"]["eval_accuracy"]
    assert got["eval"]["eval_loss"] == pytest.approx(results["eval"]["eval_loss"], rel=1e-4, abs=1e-6)
    assert "eval_accuracy_high" in _read_blocks(str(tmp_path / "rel" / "eval_results.txt"))
    expected = [r.split("\t")[:4] for r in open(os.path.join(out, "predictions.tsv")).read().splitlines()]
    assert [r.split("\t")[:4] for r in open(tmp_path / "rel" / "predictions.tsv").read().splitlines()] == expected
    reloaded = AlbertRace.from_pretrained(str(release))
    np.testing.assert_allclose(reloaded.race_head.output_weights.numpy(), model.race_head.output_weights.numpy())


@pytest.mark.e2e
def test_original_checkpoints_in_output_dir_evaluate_and_predict_the_same(workdir, tmp_path):
    tf.keras.utils.set_random_seed(11)
    model = AlbertRace(workdir["config"])
    ours, original = tmp_path / "ours", tmp_path / "original"
    oc.save_our_checkpoint(model, str(ours / "model.ckpt-200"))
    oc.save_original_checkpoint(model, str(original / "model.ckpt-200"), global_step=200)
    common = dict(data_dir=str(workdir["root"] / "all_form"), albert_config_file=workdir["config_file"],
                  spm_model_file=workdir["spm"], max_seq_length=MAX_SEQ, max_qa_length=MAX_QA, do_train=False,
                  do_eval=True, do_predict=True, eval_batch_size=4, predict_batch_size=4)
    results = [run_race(output_dir=str(out), **common) for out in (ours, original)]
    assert results[0] == results[1]
    expected = oc.files_with_text(str(ours))
    assert set(expected) >= {"eval_results.txt", "best_trial.txt", "predict_results.txt", "predictions.tsv"}
    assert oc.files_with_text(str(original)) == expected

    # A checkpoint of another model: the file and the first names, short.
    foreign = tmp_path / "foreign"
    prefix = oc.save_original_checkpoint(AlbertModel(workdir["config"]), str(foreign / "model.ckpt-best"))
    with pytest.raises(ValueError) as error:
        run_race(output_dir=str(foreign), **dict(common, do_eval=False))
    oc.assert_short_error(str(error.value), prefix)
    assert "output_weights" in str(error.value)


def test_vocab_mismatch_and_damaged_checkpoint_stop_before_any_work(workdir, tmp_path):
    config_file = tmp_path / "albert_config.json"
    AlbertConfig.from_dict(dict(workdir["config"].to_dict(), vocab_size=8000)).to_json_file(str(config_file))
    common = dict(data_dir=str(workdir["root"] / "all_form"), spm_model_file=workdir["spm"],
                  max_seq_length=MAX_SEQ, max_qa_length=MAX_QA, do_train=True, do_eval=True, do_predict=True)
    out = tmp_path / "out"
    with pytest.raises(ValueError) as error:
        run_race(output_dir=str(out), albert_config_file=str(config_file), **common)
    assert workdir["spm"] in str(error.value) and str(config_file) in str(error.value)
    assert f"{workdir['config'].vocab_size} pieces" in str(error.value) and "is 8000" in str(error.value)
    assert not out.exists()

    damaged = tmp_path / "damaged"
    prefix = oc.save_our_checkpoint(AlbertRace(workdir["config"]), str(damaged / "model.ckpt-best"))
    oc.truncate_data(prefix)
    before = sorted(os.listdir(damaged))
    with pytest.raises(ValueError, match="is damaged") as error:
        run_race(output_dir=str(damaged), albert_config_file=workdir["config_file"],
                 **dict(common, do_train=False, do_eval=False))
    # The message names the damaged file and says nothing of optimizer slots.
    assert f"`{prefix}.data-00000-of-00001` holds" in str(error.value) and "truncated" in str(error.value)
    assert "slots" not in str(error.value)
    assert sorted(os.listdir(damaged)) == before


@pytest.mark.parametrize("recompute", [False, True])
def test_recompute_reaches_the_model_only_when_set(workdir, tmp_path, monkeypatch, recompute):
    seen = recording(monkeypatch, race_task, "AlbertRace")
    with pytest.raises(Built):
        run_race(data_dir=str(workdir["root"] / "all_form"), output_dir=str(tmp_path / "out"),
                 albert_config_file=workdir["config_file"], spm_model_file=workdir["spm"], max_seq_length=MAX_SEQ,
                 max_qa_length=MAX_QA, recompute=recompute)
    assert ("recompute" in seen[0]) == recompute and seen[0].get("recompute", True) is True
