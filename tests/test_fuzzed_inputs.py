"""Fuzzed readers: valid task files corrupted (a column dropped, added or merged; a row cut; another encoding;
an empty file) either read as the same examples or raise `InputError` naming the file and line; never a raw
exception, never a silent difference.

Bounded (`max_examples`) and derandomized, so the fast suite runs the same cases every time. A file cut inside
its last line is the one case a reader cannot tell from a complete file; there the examples must be a prefix of
the complete file's, the last one possibly cut, and the reader warns that the last line has no line end.
"""

import json
import logging
import os
import re
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert_tf.tasks.ner import data as conll
from albert_tf.tasks.glue import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.pretraining.writer import local as pretraining_writer
from albert_tf.errors import InputError
from training_fixtures import train_tiny_classifier

FUZZ = settings(max_examples=30, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]


def _mnli_rows():
    labels = ["neutral", "entailment", "contradiction"]
    return [MNLI_HEADER] + [[str(i), "1", "2", "fiction", "(a)", "(b)", "(A)", "(B)", f"Le café {i} était bon .",
                             f"A dog ran {i} times .", labels[i % 3], labels[i % 3]] for i in range(5)]


# task, file under data_dir, rows, split
GLUE_FILES = {
    "mnli": ("MNLI/train.tsv", _mnli_rows(), "train"),
    "cola": ("CoLA/train.tsv", [["gj04", str(i % 2), "", f"Naïve sentence number {i} ."] for i in range(5)], "train"),
    "sts-b": ("STS-B/dev.tsv", [["index", "genre", "filename", "year", "old_index", "source1", "source2",
                                 "sentence1", "sentence2", "score"]]
              + [[str(i), "main", "f", "2012", "0", "none", "none", f"Über {i} .", f"Over {i} .", f"{i}.5"]
                 for i in range(5)], "dev"),
    "sst-2": ("SST-2/dev.tsv", [["sentence", "label"]] + [[f"a fine film {i} à voir", str(i % 2)] for i in range(5)],
              "dev"),
}


def _tsv(rows):
    return ("".join("\t".join(row) + "\n" for row in rows)).encode("utf-8")


def _lines(data):
    return data.decode("utf-8").split("\n")


def _corrupt_lines(data, draw, separator):
    """One corruption of a line-based file: a column dropped, added or merged in one line, a cut at any byte, a
    blank line inside, another encoding, or an empty file. Returns (kind, bytes)."""
    kind = draw(st.sampled_from(["drop", "add", "merge", "cut", "latin-1", "utf-16", "empty"]))
    lines = _lines(data)[:-1]
    if kind in ("drop", "add", "merge"):
        wide = [i for i, line in enumerate(lines) if len(line.split(separator)) >= 2]
        index = draw(st.sampled_from(wide if kind == "merge" else range(len(lines))))
        columns = lines[index].split(separator)
        if kind == "drop":
            del columns[draw(st.integers(0, len(columns) - 1))]
        elif kind == "add":
            columns.insert(draw(st.integers(0, len(columns))), "extra")
        else:
            at = draw(st.integers(0, len(columns) - 2))
            columns[at:at + 2] = [columns[at] + " " + columns[at + 1]]
        lines[index] = separator.join(columns)
        return kind, ("\n".join(lines) + "\n").encode("utf-8")
    if kind == "cut":
        return kind, data[:draw(st.integers(0, len(data) - 1))]
    if kind == "empty":
        return kind, b""
    return kind, data.decode("utf-8").encode(kind)


def _assert_names_file_and_line(error, path):
    assert re.search(re.escape(str(path)) + r":\d+: expected ", str(error)), str(error)
    assert "\n" not in str(error)


def _assert_prefix(got, expected, cut):
    """`got` is a prefix of `expected`; the last one may be cut (each field a prefix), when the file was cut."""
    assert len(got) <= len(expected)
    assert got[:-1] == expected[:len(got) - 1]
    if got:
        if got[-1] != expected[len(got) - 1]:
            assert cut
            assert all(str(b).startswith(_cut_text(a)) or a == b for a, b in zip(got[-1], expected[len(got) - 1]))


def _cut_text(value):
    """The text a cut field was read from: a float read from a cut "3.5" ("3.") prints as "3.0"."""
    return str(value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _glue_examples(task, data_dir, split):
    processor = glue.get_processor(task)
    examples = processor.get_train_examples(data_dir) if split == "train" else processor.get_dev_examples(data_dir)
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


@pytest.mark.parametrize("task", sorted(GLUE_FILES))
@FUZZ
@given(data=st.data())
def test_glue_readers(task, data, caplog):
    name, rows, split = GLUE_FILES[task]
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path))
        valid = _tsv(rows)
        with open(path, "wb") as f:
            f.write(valid)
        expected = _glue_examples(task, root, split)
        kind, corrupted = _corrupt_lines(valid, data.draw, "\t")
        with open(path, "wb") as f:
            f.write(corrupted)
        caplog.clear()
        try:
            with caplog.at_level(logging.WARNING):
                got = _glue_examples(task, root, split)
        except InputError as e:
            _assert_names_file_and_line(e, path)
            return
        if kind == "cut":
            cut = not corrupted.endswith(b"\n")
            _assert_prefix(got, expected, cut)
            assert ("the last line has no line end" in caplog.text) == cut
        else:
            assert got == expected, kind


CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n"
         "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\nZürich NNP B-NP B-LOC\n").encode("utf-8")


def _conll_sentences(path):
    return [(s.words, s.tags) for s in conll.read_sentences(path)]


@FUZZ
@given(data=st.data())
def test_conll_reader(data):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "train.txt")
        with open(path, "wb") as f:
            f.write(CONLL)
        expected = _conll_sentences(path)
        kind, corrupted = _corrupt_lines(CONLL, data.draw, " ")
        with open(path, "wb") as f:
            f.write(corrupted)
        try:
            got = _conll_sentences(path)
        except InputError as e:
            _assert_names_file_and_line(e, path)
            return
        if kind == "cut":
            assert len(got) <= len(expected) and got[:-1] == expected[:len(got) - 1]
            if got and got[-1] != expected[len(got) - 1]:
                words, tags = got[-1]
                full_words, full_tags = expected[len(got) - 1]
                assert full_words[:len(words) - 1] == words[:-1] and full_words[len(words) - 1].startswith(words[-1])
                assert full_tags[:len(tags) - 1] == tags[:-1] and full_tags[len(tags) - 1].startswith(tags[-1])
        else:
            # A blank line from a dropped/merged `-DOCSTART-` column reads the same; anything else is refused.
            assert got == expected, kind


SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
    {"context": "The café opened in 1889 in Paris .",
     "qas": [{"id": "q1", "question": "When did it open?", "answers": [{"text": "1889", "answer_start": 19}],
              "is_impossible": False},
             {"id": "q2", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 27}]}]}]}]}
RACE = {"id": "a1.txt", "article": "The café opened in 1889 .", "questions": ["When did it open?"],
        "options": [["1889", "1900", "1920", "never"]], "answers": ["A"]}


def _corrupt_json(obj, draw):
    """One corruption of a JSON object: a key removed or its value replaced by another type anywhere in the
    tree, a cut, another encoding, or an empty file. Returns (kind, bytes)."""
    kind = draw(st.sampled_from(["remove", "retype", "cut", "latin-1", "utf-16", "empty"]))
    if kind in ("remove", "retype"):
        obj = json.loads(json.dumps(obj))
        nodes = []

        def walk(node):
            if isinstance(node, dict):
                for key in node:
                    nodes.append((node, key))
                    walk(node[key])
            elif isinstance(node, list):   # a list item may be retyped; removing one is a smaller valid file
                for index, item in enumerate(node):
                    nodes.append((node, index))
                    walk(item)

        walk(obj)
        parent, key = draw(st.sampled_from([n for n in nodes if kind == "retype" or isinstance(n[0], dict)]))
        if kind == "remove":
            del parent[key]
        else:
            value = parent[key]
            parent[key] = draw(st.sampled_from([v for v in (None, 7, "text", [1], {"x": 1}) if type(v) != type(value)]))
        return kind, json.dumps(obj, ensure_ascii=False).encode("utf-8")
    text = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    if kind == "cut":
        return kind, text[:draw(st.integers(0, len(text) - 1))]
    if kind == "empty":
        return kind, b""
    return kind, text.decode("utf-8").encode(kind)


def _squad_examples(path):
    examples = squad.read_squad_examples(path, is_training=True)
    return [(e.qas_id, e.question_text, e.paragraph_text, e.orig_answer_text, e.start_position) for e in examples]


@FUZZ
@given(data=st.data())
def test_squad_reader(data, caplog):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "train.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(SQUAD, f, ensure_ascii=False)
        expected = _squad_examples(path)
        kind, corrupted = _corrupt_json(SQUAD, data.draw)
        with open(path, "wb") as f:
            f.write(corrupted)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            try:
                got = _squad_examples(path)
            except InputError as e:
                assert path in str(e)
                return
        # What still reads is the same, or a training answer not found in the context, which is skipped with a
        # warning naming the question (the original would train on a wrong span).
        if got != expected:
            assert kind in ("remove", "retype") and "Skipping question id" in caplog.text, (kind, got)
            assert set(got) < set(expected)


def _race_examples(data_dir):
    return [(e.example_id, e.context, e.endings, e.label) for e in race.read_race_examples(data_dir, "train")
            if e.level == "high"]


@FUZZ
@given(data=st.data())
def test_race_reader(data):
    with tempfile.TemporaryDirectory() as root:
        for level in ("middle", "high"):
            os.makedirs(os.path.join(root, "RACE", "train", level))
        with open(os.path.join(root, "RACE", "train", "middle", "1.txt"), "w", encoding="utf-8") as f:
            json.dump(RACE, f, ensure_ascii=False)
        path = os.path.join(root, "RACE", "train", "high", "1.txt")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(RACE, f, ensure_ascii=False)
        expected = _race_examples(root)
        kind, corrupted = _corrupt_json(RACE, data.draw)
        with open(path, "wb") as f:
            f.write(corrupted)
        try:
            got = _race_examples(root)
        except InputError as e:
            assert path in str(e)
            return
        # The optional `id` may go (the file name stands in for it) or be another id; nothing else reads
        # differently.
        other_id = kind in ("remove", "retype") and json.loads(corrupted).get("id") != RACE["id"]
        assert got == expected or (other_id and [g[1:] for g in got] == [e[1:] for e in expected]), (kind, got)


@FUZZ
@given(data=st.data())
def test_pretraining_text_reader(data):
    text = "Le café était bon .\nIt was .\n\nZürich is a city .\n".encode("utf-8")
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "corpus.txt")
        kind, corrupted = _corrupt_lines(text, data.draw, " ")
        with open(path, "wb") as f:
            f.write(corrupted)
        try:
            lines = [line for shard, _ in pretraining_writer.iter_shards([path], 1 << 20) for line in shard]
        except InputError as e:
            _assert_names_file_and_line(e, path)
            return
        assert [line.decode("utf-8") for line in lines] == corrupted.decode("utf-8").split("\n")[:len(lines)]


# --- the checkpoint state file ----------------------------------------------------------------------------------

def _resume(model_dir, num_train_steps, keep):
    """The tiny classifier trained to `num_train_steps` in `model_dir`, resuming from what is there; its step."""
    return train_tiny_classifier(model_dir, num_train_steps, keep=keep)[0]["global_step"]


def _files(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return out


def _state_cases(rng, state, other):
    """(name, bytes) of damaged `checkpoint` state files: cuts, garbage, wrong and missing paths, absolute paths,
    another directory's checkpoint."""
    cases = [(f"cut at {n}", state[:n]) for n in [rng.randrange(1, len(state))]]
    cases.append(("garbage", bytes(rng.randrange(256) for _ in range(60))))
    cases.append(("empty", b""))
    cases.append(("missing files", b'model_checkpoint_path: "model.ckpt-8"\n'
                                    b'all_model_checkpoint_paths: "model.ckpt-6"\n'
                                    b'all_model_checkpoint_paths: "model.ckpt-8"\n'))
    cases.append(("wrong paths", b'model_checkpoint_path: "/nonexistent/model.ckpt-4"\n'))
    cases.append(("another directory's", f'model_checkpoint_path: "{other}"\nall_model_checkpoint_paths: "{other}"\n'
                  .encode()))
    cases.append(("absolute own paths, another's first",
                  f'model_checkpoint_path: "{{d}}/model.ckpt-4"\nall_model_checkpoint_paths: "{other}"\n'
                  'all_model_checkpoint_paths: "{d}/model.ckpt-2"\nall_model_checkpoint_paths: "{d}/model.ckpt-4"\n'
                  .encode()))
    return cases


def test_checkpoint_state_file(tmp_path, caplog):
    """The `checkpoint` state file damaged in every way a cut write, a copy or a hand edit leaves it: the run
    resumes from the newest intact checkpoint on disk, overwrites and deletes no intact checkpoint (its own or
    another directory's that the file names) and names the file, with no traceback."""
    import random   # pylint: disable=import-outside-toplevel
    import shutil   # pylint: disable=import-outside-toplevel
    from albert_tf.commands.app import one_line   # pylint: disable=import-outside-toplevel
    from albert_tf.training import loop   # pylint: disable=import-outside-toplevel
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="absl")   # an earlier test may have set absl's verbosity
    rng = random.Random(0)
    trained, other_dir = str(tmp_path / "trained"), str(tmp_path / "other")
    assert _resume(trained, 4, keep=10) == 4
    shutil.copytree(trained, other_dir)
    other = os.path.join(other_dir, "model.ckpt-4")
    other_files = _files(other_dir)
    intact = {name: data for name, data in _files(trained).items() if name.startswith("model.ckpt-")}
    with open(os.path.join(trained, "checkpoint"), "rb") as f:
        state = f.read()
    for case, damaged in _state_cases(rng, state, other):
        model_dir = str(tmp_path / re.sub(r"\W+", "_", case))
        shutil.copytree(trained, model_dir)
        with open(os.path.join(model_dir, "checkpoint"), "wb") as f:
            f.write(damaged.replace(b"{d}", model_dir.encode()))
        caplog.clear()
        try:
            step = _resume(model_dir, 6, keep=2)
        except InputError as e:   # pragma: no cover - the cases above all resume
            raise AssertionError(f"{case}: {one_line(e)}") from e
        assert step == 6, case
        files = _files(model_dir)
        for name, data in intact.items():   # model.ckpt-4 as it was; model.ckpt-2 too, unless swept (keep=2)
            if name.startswith("model.ckpt-4") or name in files:
                assert files[name] == data, (case, name)
        assert [s for s, _ in loop.list_checkpoints(model_dir)] in ([2, 4, 6], [4, 6]), case
        assert _files(other_dir) == other_files, case   # another directory's checkpoint never touched
        latest = tf_latest(model_dir)
        assert latest == os.path.join(model_dir, "model.ckpt-6"), (case, latest)
        assert "Resuming from " + os.path.join(model_dir, "model.ckpt-4") in caplog.text, case


def tf_latest(model_dir):
    import tensorflow as tf   # pylint: disable=import-outside-toplevel
    return tf.train.latest_checkpoint(model_dir)


# --- TFRecords: the pretraining data and the runners' feature files ----------------------------------------------

SEQ, PRED = 16, 3


def _record_files(root):
    """A pretraining TFRecord (the schema of create_pretraining_data) and a classifier feature file (the
    runners' cache, `feature_to_tf_example`), 6 records each; returns {name: (path, read)} where `read(path)`
    reads a file as the runner does (in a graph) and returns its rows."""
    import tensorflow as tf   # pylint: disable=import-outside-toplevel
    from albert_tf.data import features as features_lib   # pylint: disable=import-outside-toplevel
    from albert_tf.tasks.glue import data as glue_data   # pylint: disable=import-outside-toplevel
    from albert_tf.tasks.pretraining import inputs   # pylint: disable=import-outside-toplevel
    pretraining = os.path.join(root, "pretraining.tfrecord")
    with tf.io.TFRecordWriter(pretraining) as writer:
        for i in range(6):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "input_ids": features_lib.int64_feature([i + 5] * SEQ),
                "input_mask": features_lib.int64_feature([1] * SEQ),
                "segment_ids": features_lib.int64_feature([0] * SEQ),
                "token_boundary": features_lib.int64_feature([1] * SEQ),
                "masked_lm_positions": features_lib.int64_feature([1, 2, 3]),
                "masked_lm_ids": features_lib.int64_feature([7, 8, 9]),
                "masked_lm_weights": features_lib.float_feature([1.0] * PRED),
                "next_sentence_labels": features_lib.int64_feature([i % 2])})).SerializeToString())
    classifier = os.path.join(root, "sst-2_eval.tf_record")
    with tf.io.TFRecordWriter(classifier) as writer:
        for i in range(6):
            feature = glue_data.InputFeatures([i + 5] * SEQ, [1] * SEQ, [0] * SEQ, i % 2)
            writer.write(glue_data.feature_to_tf_example(feature, "sst-2").SerializeToString())

    def rows(dataset):
        @tf.function
        def collect(ds):   # the runners read in a graph: errors arrive as graph-execution errors
            return ds.reduce(tf.zeros([0], tf.int32), lambda acc, b: tf.concat([acc, b["input_ids"][:, 0]], 0))
        return collect(dataset).numpy().tolist()

    def read_pretraining(path):
        inputs.check_record_lengths([path], SEQ, PRED)
        # The evaluation input repeats (the original's: a fixed number of steps): one pass over 6 records.
        return rows(inputs.pretraining_dataset([path], SEQ, PRED, 2, is_training=False).take(3))

    def read_classifier(path):
        return rows(glue_data.file_based_dataset(path, SEQ, False, False, "sst-2", 2))

    return {"pretraining": (pretraining, read_pretraining), "classifier features": (classifier, read_classifier)}


def _record_damage(rng, data):
    """(name, bytes) of damaged copies of a TFRecord file: cuts at random offsets, a byte flipped in a record's
    length, length CRC, payload and payload CRC, an empty file, a file that is not a TFRecord file."""
    starts, at = [], 0
    while at < len(data):   # each record: 8-byte length, 4-byte CRC, payload, 4-byte CRC
        starts.append(at)
        at += 16 + int.from_bytes(data[at:at + 8], "little")
    cases = [(f"cut at {n}", data[:n]) for n in sorted(rng.sample(range(1, len(data)), 6))]
    for part in ("length", "length CRC", "payload", "payload CRC"):
        index = rng.randrange(len(starts))
        start, end = starts[index], (starts + [len(data)])[index + 1]
        offset = {"length": start + rng.randrange(0, 8), "length CRC": start + rng.randrange(8, 12),
                  "payload": rng.randrange(start + 12, end - 4), "payload CRC": rng.randrange(end - 4, end)}[part]
        damaged = bytearray(data)
        damaged[offset] ^= 1 << rng.randrange(8)
        cases.append((f"{part} byte {offset} flipped", bytes(damaged)))
    cases.append(("empty", b""))
    cases.append(("text", b"the cat sat on the mat\n" * 10))
    return cases, starts


def test_tfrecords(tmp_path):
    """Every damaged copy either stops with one line naming the file (and TensorFlow's offset), through the
    driver's `data_loss_error` (the line a runner prints), or reads as the complete file's first records: a file
    cut at a record boundary, or empty, which the TFRecord format cannot tell from a shorter file
    (docs/troubleshooting.md)."""
    import random   # pylint: disable=import-outside-toplevel
    import tensorflow as tf   # pylint: disable=import-outside-toplevel
    from albert_tf.commands.app import one_line   # pylint: disable=import-outside-toplevel
    from albert_tf.training import driver   # pylint: disable=import-outside-toplevel
    rng = random.Random(0)
    undetected = []
    for name, (path, read) in _record_files(str(tmp_path)).items():
        expected = read(path)
        assert expected == [5, 6, 7, 8, 9, 10], name
        with open(path, "rb") as f:
            data = f.read()
        cases, starts = _record_damage(rng, data)
        for case, damaged in cases:
            target = str(tmp_path / (re.sub(r"\W+", "_", f"{name} {case}") + ".tfrecord"))
            with open(target, "wb") as f:
                f.write(damaged)
            try:
                got = read(target)
            except InputError as e:   # the pretraining check of each file's first record
                line = one_line(e)
                assert target in line and "\n" not in str(e), (name, case, line)
                continue
            except tf.errors.DataLossError as e:
                error = driver.data_loss_error([path, target], str(tmp_path))
                assert error is not None, (name, case, one_line(e))
                line = one_line(error)
                assert re.match(rf"{re.escape(target)}: (truncated|corrupted) record at \d+", line), (name, case, line)
                continue
            # Read without an error: a file cut at a record boundary (or empty) holds the complete file's first
            # records (repeated by the pretraining evaluation input).
            assert len(damaged) in starts, (name, case, got)
            kept = expected[:starts.index(len(damaged))]
            assert got == (kept * len(expected))[:len(got)], (name, case, got)
            undetected.append((name, case))
    # An empty pretraining file is refused (its repeating training input would wait forever); an empty feature
    # file reads as no record (evaluation and prediction refuse it by its record count: `ensure_cached_features`).
    assert all(case.startswith("cut at") or (name, case) == ("classifier features", "empty")
               for name, case in undetected), undetected
