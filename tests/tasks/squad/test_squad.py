"""SQuAD data: reading, LCS alignment, features against tf-models-official's port (stored), TFRecords, eval-feature
JSON."""

import gzip
import json
import logging
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import tokenization
from albert_tf.tasks.squad import data as squad
import squad_fixtures as fx
from repo_paths import REFERENCES

MAX_SEQ, STRIDE, MAX_QUERY = 48, 16, 12


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("squad")
    spm_file = fx.train_spm(str(d))
    return types.SimpleNamespace(
        dir=d, spm_file=spm_file, tokenizer=tokenization.FullTokenizer(spm_model_file=spm_file),
        v1=fx.write_squad(str(d / "v1.json"), with_negative=False),
        v2=fx.write_squad(str(d / "v2.json"), with_negative=True))


def _convert(examples, tokenizer, is_training, max_seq=MAX_SEQ, stride=STRIDE, max_query=MAX_QUERY):
    out = []
    stats = squad.convert_examples_to_features(examples, tokenizer, max_seq, stride, max_query, is_training,
                                               out.append, do_lower_case=True)
    return out, stats


@pytest.mark.parametrize("with_negative", [False, True])
def test_alignment_maps_every_answer_back_to_its_exact_text(env, with_negative):
    path = env.v2 if with_negative else env.v1
    examples = squad.read_squad_examples(path, is_training=True)
    features, stats = _convert(examples, env.tokenizer, is_training=True)
    assert stats.num_mismatch == 0
    # Training features carry no example index: a window with doc_span_index 0 starts the next example.
    by_example = []
    for f in features:
        if f.doc_span_index == 0:
            by_example.append([])
        by_example[-1].append(f)
    assert len(by_example) == len(examples)
    for example, windows in zip(examples, by_example):
        hits = 0
        for f in windows:
            assert len(f.input_ids) == len(f.input_mask) == len(f.segment_ids) == len(f.p_mask) == MAX_SEQ
            if f.is_impossible:
                assert f.start_position == f.end_position == 0
                continue
            doc_offset = f.tokens.index("[SEP]") + 1
            s = f.tok_start_to_orig_index[f.start_position - doc_offset]
            e = f.tok_end_to_orig_index[f.end_position - doc_offset]
            assert example.paragraph_text[s:e + 1].strip() == example.orig_answer_text
            hits += 1
        if example.is_impossible:
            assert hits == 0
        else:
            assert hits >= 1, example.qas_id


def test_layout_p_mask_segments_and_windows(env):
    examples = squad.read_squad_examples(env.v1, is_training=False)
    features, _ = _convert(examples, env.tokenizer, is_training=False)
    sp = env.tokenizer.sp_model
    assert features[0].unique_id == 1000000000
    assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))
    for f in features:
        n_query = f.tokens.index("[SEP]") - 1
        real = sum(f.input_mask)
        assert f.input_ids[0] == sp.PieceToId("[CLS]") and f.input_ids[n_query + 1] == sp.PieceToId("[SEP]")
        assert f.input_ids[real - 1] == sp.PieceToId("[SEP]") and f.paragraph_len == real
        assert f.segment_ids == [0] * (n_query + 2) + [1] * (real - n_query - 2) + [0] * (MAX_SEQ - real)
        expected_p_mask = [0] + [1] * (n_query + 1) + [0] * (real - n_query - 3) + [1] * (MAX_SEQ - real + 1)
        assert f.p_mask == expected_p_mask
        assert len(f.tok_start_to_orig_index) == real - n_query - 3
        assert real - n_query - 3 <= MAX_SEQ - n_query - 3
    # The serving-side p_mask derived from the mask and segments is the written one.
    from albert_tf.tasks.squad.model import default_p_mask

    derived = default_p_mask(np.array([f.input_mask for f in features]), np.array([f.segment_ids for f in features]))
    np.testing.assert_array_equal(derived.numpy(), np.array([f.p_mask for f in features]))
    # Windows overlap by the stride and each doc token is max-context in exactly one window.
    first = [f for f in features if f.example_index == 0]
    assert len(first) > 1
    counts = {}
    for f in first:
        doc_offset = f.tokens.index("[SEP]") + 1
        start = f.tok_start_to_orig_index
        for pos, flag in f.token_is_max_context.items():
            counts.setdefault(start[pos - doc_offset], []).append(flag)
    assert all(sum(flags) == 1 for flags in counts.values())


@pytest.mark.parametrize("is_training", [True, False])
def test_features_equal_tf_models_squad_lib_sp(env, is_training):
    """tf-models-official's `squad_lib_sp` ports the original's conversion (its `paragraph_mask` is 1 - p_mask);
    its features of the v2 fixture, tokenized by `squad_fixtures.train_spm`'s model, are stored by
    tests/references/make_tfm_references.py."""
    path = os.path.join(REFERENCES, "tfm_squad_features.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        stored = json.load(f)
    assert (stored["max_seq_length"], stored["doc_stride"], stored["max_query_length"]) == (MAX_SEQ, STRIDE, MAX_QUERY)
    theirs = stored["training" if is_training else "evaluation"]
    ours, _ = _convert(squad.read_squad_examples(env.v2, is_training=is_training), env.tokenizer, is_training)
    assert len(ours) == len(theirs) > 20
    for a, b in zip(ours, theirs):
        b = dict(b, token_is_max_context=dict(b["token_is_max_context"]))
        for name in ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                     "tok_end_to_orig_index", "token_is_max_context", "tokens", "input_ids", "input_mask",
                     "segment_ids", "paragraph_len", "start_position", "end_position", "is_impossible"):
            assert getattr(a, name) == b[name], name
        assert a.p_mask == [1 - x for x in b["paragraph_mask"]]


def test_lcs_alignment_with_accents_spacing_and_mismatch():
    text = "Café  Zürich,   1990, naïve ﬁne"
    pieces = ["▁cafe", "▁zurich", ",", "▁1990", ",", "▁naive", "▁fine"]
    out = squad.align_pieces(text, pieces, do_lower_case=True)
    spans = [text[s:e + 1] for s, e in zip(out["tok_start_to_orig_index"], out["tok_end_to_orig_index"])]
    assert [s.strip() for s in spans] == ["Café", "Zürich", ",", "1990", ",", "naïve", "ﬁne"]
    assert squad.align_pieces("hello world", ["▁xyz"], do_lower_case=True) is None


def test_tfrecords_have_the_original_names_and_parse(env):
    examples = squad.read_squad_examples(env.v2, is_training=True)
    path = str(env.dir / "train.tf_record")
    with squad.FeatureWriter(path, is_training=True) as writer:
        stats = squad.convert_examples_to_features(examples, env.tokenizer, MAX_SEQ, STRIDE, MAX_QUERY, True,
                                                   writer.process_feature, True)
    assert not [p for p in os.listdir(env.dir) if ".tmp-" in p]
    record = next(iter(tf.data.TFRecordDataset(path)))
    names = set(tf.train.Example.FromString(record.numpy()).features.feature)
    assert names == {f.name for f in squad.SQUAD + squad.SQUAD_TRAINING}
    batch = next(iter(squad.squad_dataset(path, MAX_SEQ, True, 4, True, is_v2=True)))
    assert batch["input_ids"].dtype == tf.int32 and batch["p_mask"].shape == (4, MAX_SEQ)
    n = sum(1 for _ in squad.squad_dataset(path, MAX_SEQ, False, 4, False, is_v2=False))
    assert n == -(-stats.num_features // 4)
    v1_keys = next(iter(squad.squad_dataset(path, MAX_SEQ, False, 4, False, is_v2=False))).keys()
    assert "p_mask" not in v1_keys


def test_eval_features_json_round_trip_and_no_pickle(env):
    examples = squad.read_squad_examples(env.v1, is_training=False)
    features, _ = _convert(examples, env.tokenizer, is_training=False)
    path = str(env.dir / "eval_left.json")
    squad.write_eval_features(features, path, metadata={"max_seq_length": MAX_SEQ})
    back = squad.read_eval_features(path, expected_metadata={"max_seq_length": MAX_SEQ})
    for a, b in zip(features, back):
        for name in ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                     "tok_end_to_orig_index", "token_is_max_context", "tokens", "paragraph_len"):
            assert getattr(a, name) == getattr(b, name)
    with pytest.raises(ValueError, match="max_seq_length=48"):
        squad.read_eval_features(path, expected_metadata={"max_seq_length": 64})
    pickled = str(env.dir / "left.pkl")
    with open(pickled, "wb") as f:
        f.write(b"\x80\x04\x95pickle")
    with pytest.raises(ValueError, match="never loaded"):
        squad.read_eval_features(pickled)


def test_bad_input_errors_and_skipped_answers(env, caplog):
    bad = env.dir / "bad.json"
    bad.write_text('{"data": [\n  {"paragraphs": [}\n]}')
    with pytest.raises(ValueError, match=r"not valid JSON.*line 2"):
        squad.read_squad_examples(str(bad), is_training=True)
    bad.write_text('{"version": "1.1"}')
    with pytest.raises(ValueError, match="`data` list"):
        squad.load_squad_json(str(bad))
    with pytest.raises(ValueError, match="does not exist"):
        squad.load_squad_json(str(env.dir / "missing.json"))

    data = fx.squad_dataset(with_negative=False)
    qas = data["data"][0]["paragraphs"][0]["qas"]
    qas[0]["answers"][0]["answer_start"] += 3           # Text no longer at answer_start.
    qas[1]["answers"][0]["text"] = "not in the context"
    moved = env.dir / "moved.json"
    moved.write_text(json.dumps(data))
    caplog.set_level(logging.WARNING)
    examples = squad.read_squad_examples(str(moved), is_training=True)
    assert len(examples) == 18
    assert "skipped 2 of 20 training questions" in caplog.text
    qas[2]["answers"].append(dict(qas[2]["answers"][0]))
    moved.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="exactly 1 answer"):
        squad.read_squad_examples(str(moved), is_training=True)

    with pytest.raises(ValueError, match=r"max_seq_length \(20\) must be greater than max_query_length \(17\)"):
        _convert(examples, env.tokenizer, True, max_seq=20, max_query=17)
    with pytest.raises(ValueError, match="SentencePiece"):
        _convert(examples, object(), True)


def test_out_of_window_answers_get_cls_targets(env):
    examples = squad.read_squad_examples(env.v1, is_training=True)
    features, stats = _convert(examples, env.tokenizer, is_training=True)
    # v1 keeps windows without the answer, with [CLS] targets and is_impossible=1 (as `convert_examples_to_features` in the original `squad_utils.py`).
    assert stats.num_negative > 0 and stats.num_positive >= len(examples)
    neg = [f for f in features if f.is_impossible]
    assert all(f.start_position == 0 and f.end_position == 0 for f in neg)
    pos = np.array([[f.start_position, f.end_position] for f in features if not f.is_impossible])
    assert (pos[:, 0] <= pos[:, 1]).all() and (pos > 0).all()
