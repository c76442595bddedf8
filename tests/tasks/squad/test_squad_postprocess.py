"""SQuAD post-processing (v1 n-best, v2 beam + null threshold) and the official metrics."""

import json
import os
import types

import numpy as np
import pytest

from albert_tf.text import tokenization
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad import postprocess as post
import squad_fixtures as fx
from repo_paths import REFERENCES

MAX_SEQ, STRIDE, MAX_QUERY = 80, 32, 12


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("squad_post")
    spm_file = fx.train_spm(str(d))
    return types.SimpleNamespace(dir=d, tokenizer=tokenization.FullTokenizer(spm_model_file=spm_file))


def _oracle_inputs(env, with_negative):
    """Eval features plus the gold (start, end) of each window, from the training conversion of the same file."""
    path = fx.write_squad(str(env.dir / f"data_{with_negative}.json"), with_negative)
    eval_examples = squad.read_squad_examples(path, is_training=False)
    eval_features, train_features = [], []
    squad.convert_examples_to_features(eval_examples, env.tokenizer, MAX_SEQ, STRIDE, MAX_QUERY, False,
                                       eval_features.append, True)
    squad.convert_examples_to_features(squad.read_squad_examples(path, is_training=True), env.tokenizer,
                                       MAX_SEQ, STRIDE, MAX_QUERY, True, train_features.append, True)
    assert [f.unique_id for f in eval_features] == [f.unique_id for f in train_features]
    assert len(eval_features) > len(eval_examples)   # Some paragraphs need several windows.
    dataset = squad.load_squad_json(path)
    return dataset, eval_examples, eval_features, train_features


def test_v1_oracle_logits_give_exact_answers(env, tmp_path):
    dataset, examples, features, gold = _oracle_inputs(env, with_negative=False)
    rng = np.random.default_rng(0)
    results = []
    for f, g in zip(features, gold):
        start = rng.normal(0, 1, MAX_SEQ)
        end = rng.normal(0, 1, MAX_SEQ)
        if not g.is_impossible:
            start[g.start_position] = end[g.end_position] = 10.0
        results.append(post.RawResult(f.unique_id, start.tolist(), end.tolist()))
    result_dict = {}
    post.accumulate_predictions_v1(result_dict, examples, features, results, n_best_size=5, max_answer_length=30)
    preds, nbest = post.write_predictions_v1(result_dict, examples, features, results, 5,
                                             str(tmp_path / "predictions.json"), str(tmp_path / "nbest.json"))
    for example in examples:
        qa = next(q for a in dataset for p in a["paragraphs"] for q in p["qas"] if q["id"] == example.qas_id)
        assert preds[example.qas_id] == qa["answers"][0]["text"]
    assert post.evaluate_v1(dataset, preds) == {"exact_match": 100.0, "f1": 100.0}
    on_disk = json.loads((tmp_path / "predictions.json").read_text())
    assert on_disk == preds
    entries = json.loads((tmp_path / "nbest.json").read_text())[examples[0].qas_id]
    assert abs(sum(e["probability"] for e in entries) - 1.0) < 1e-9
    scores = [e["start_log_prob"] + e["end_log_prob"] for e in entries]
    assert scores == sorted(scores, reverse=True) and 1 <= len(entries) <= 5
    assert len({e["text"] for e in entries}) == len(entries)
    # max_answer_length counts pieces: with 1 only single-piece spans survive.
    short = {}
    post.accumulate_predictions_v1(short, examples, features, results, n_best_size=5, max_answer_length=1)
    spans = [span for per_feature in short.values() for d in per_feature.values() for span in d]
    assert spans and all(s == e for s, e in spans)


def _v2_results(features, gold, rng, start_n_top=3):
    """Beam results with the gold span first (cls -4 - 0.1 * example index) or, without one, [CLS] first (+4)."""
    results = []
    for f, g in zip(features, gold):
        doc_offset = f.tokens.index("[SEP]") + 1
        n_doc = len(f.tok_start_to_orig_index)
        if not g.is_impossible:
            starts = [g.start_position] + [doc_offset + i for i in rng.choice(n_doc, start_n_top - 1)]
            ends = []
            for s in starts:
                ends += [g.end_position if s == g.start_position else s, min(s + 1, doc_offset + n_doc - 1)]
            cls = -4.0 - 0.1 * f.example_index
        else:
            starts = [0] + [doc_offset + i for i in rng.choice(n_doc, start_n_top - 1)]
            ends = []
            for s in starts:
                ends += [s, s]
            cls = 4.0
        start_lp = sorted(rng.uniform(-3, -1, start_n_top), reverse=True)
        start_lp[0] = -0.01
        end_lp = []
        for _ in starts:
            end_lp += [-0.02, -2.5]
        results.append(post.RawResultV2(f.unique_id, start_lp, starts, end_lp, ends, cls))
    return results


def test_v2_oracle_threshold_search_and_files(env, tmp_path):
    dataset, examples, features, gold = _oracle_inputs(env, with_negative=True)
    results = _v2_results(features, gold, np.random.default_rng(1))
    result_dict, cls_dict = {}, {}
    post.accumulate_predictions_v2(result_dict, cls_dict, examples, features, results, 20, 30, 3, 2)
    files = [str(tmp_path / n) for n in ("predictions.json", "nbest.json", "null_odds.json")]
    metrics = post.evaluate_v2(result_dict, cls_dict, dataset, examples, features, results, 20, *files)
    # An answerable example's null score is its answer window's cls (the minimum); impossible ones have +4.
    odds = json.loads((tmp_path / "null_odds.json").read_text())
    for i, e in enumerate(examples):
        assert odds[e.qas_id] == pytest.approx(4.0 if e.qas_id[2] == "n" else -4.0 - 0.1 * i)
    # The official search returns the largest answerable score diff as best threshold; the original then
    # answers only when `score_diff < threshold`, so that one question becomes "" (the original's quirk).
    top = max(examples, key=lambda e: odds[e.qas_id] if e.qas_id[2] != "n" else -1e9)
    assert metrics["null_score_diff_threshold"] == pytest.approx(odds[top.qas_id])
    preds = json.loads((tmp_path / "predictions.json").read_text())
    assert [k for k, v in preds.items() if v == ""] == [top.qas_id] + [e.qas_id for e in examples
                                                                       if e.qas_id[2] == "n"]
    assert metrics["NoAns_f1"] == 100.0 and metrics["HasAns_f1"] == pytest.approx(95.0)
    assert metrics["f1"] == metrics["exact"] == pytest.approx(96.0)
    assert metrics["HasAns_total"] == 20 and metrics["NoAns_total"] == 5
    # A fixed threshold skips the search: above every score diff, no question is answered with "".
    fixed = post.evaluate_v2(result_dict, cls_dict, dataset, examples, features, results, 20, *files,
                             null_score_diff_threshold=10.0)
    assert fixed["null_score_diff_threshold"] == 10.0 and fixed["HasAns_exact"] == 100.0
    preds = json.loads((tmp_path / "predictions.json").read_text())
    assert all(preds[e.qas_id] for e in examples if e.qas_id[2] != "n")
    # The official scoring still counts na_prob (here the cls logit 4) > 1.0 as "no answer".
    assert fixed["NoAns_exact"] == 100.0


def test_v2_example_without_features_gets_null_prediction(env):
    dataset, examples, features, gold = _oracle_inputs(env, with_negative=True)
    keep = [f for f in features if f.example_index != 0]
    results = _v2_results(keep, [g for f, g in zip(features, gold) if f.example_index != 0],
                          np.random.default_rng(2))
    result_dict, cls_dict = {}, {}
    post.accumulate_predictions_v2(result_dict, cls_dict, examples, keep, results, 20, 30, 3, 2)
    preds, odds, nbest = post.write_predictions_v2(result_dict, cls_dict, examples, keep, results, 20,
                                                   null_score_diff_threshold=0.0)
    assert preds[examples[0].qas_id] == "" and odds[examples[0].qas_id] == 1000000
    assert nbest[examples[0].qas_id][0]["start_log_prob"] == -1e6
    with pytest.raises(ValueError, match="No model result"):
        post.accumulate_predictions_v2({}, {}, examples, features, results, 20, 30, 3, 2)


HAND_PREDICTIONS = {
    "p0q0": "1889", "p0q1": "Eiffel's company", "p0q2": "330 metres tall", "p0q3": "The 41 years!",
    "p1q0": "zürich", "p1q1": "421 000", "p1q2": "", "p1q3": "the north western tip",
    "p2q0": "Warsaw, Poland", "p2q1": "an 1867", "p2q2": "prize", "p2q3": "Henri Becquerel and Pierre Curie",
    "p3q0": "Atlantic", "p3q1": "209,000 cubic metres", "p3q2": "nine countries", "p3q3": "Brazil (60%)",
    "p4q0": "1683", "p4q1": "army", "p4q2": "1876 ,", "p4q3": "",
    "p0n0": "", "p1n0": "the lake", "p2n0": "", "p3n0": "Nile", "p4n0": "",
}


def v1_metrics_inputs():
    dataset = fx.squad_dataset(with_negative=False)["data"]
    dataset[0]["paragraphs"][0]["qas"][1]["answers"].append({"text": "Eiffel's company", "answer_start": 0})
    return dataset, {k: v for k, v in HAND_PREDICTIONS.items() if "n" not in k[2]}


def v2_metrics_inputs():
    rng = np.random.default_rng(3)
    na_probs = {k: float(rng.uniform(-3, 3)) for k in HAND_PREDICTIONS}
    return fx.squad_dataset(with_negative=True)["data"], dict(HAND_PREDICTIONS), na_probs


def official_metrics(version):
    """What tf-models-official's copies of the official evaluators (`squad_evaluate_v1_1`, `squad_evaluate_v2_0`)
    return on `v1_metrics_inputs()` / `v2_metrics_inputs()`: stored by tests/references/make_tfm_references.py."""
    path = os.path.join(REFERENCES, "tfm_squad_metrics.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)[version]


def test_v1_metrics_equal_official_evaluator():
    dataset, preds = v1_metrics_inputs()
    ours = post.evaluate_v1(dataset, preds)
    theirs = official_metrics("v1")
    assert 0 < ours["f1"] < 100 and ours["exact_match"] < ours["f1"]
    assert ours["exact_match"] == pytest.approx(100 * theirs["exact_match"], abs=1e-9)
    assert ours["f1"] == pytest.approx(100 * theirs["final_f1"], abs=1e-9)


def test_v2_metrics_equal_official_evaluator():
    dataset, preds, na_probs = v2_metrics_inputs()
    ours = post.squad_v2_eval(dataset, preds, na_probs, na_prob_thresh=1.0)
    theirs = official_metrics("v2")
    for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1",
                "NoAns_total"):
        assert ours[key] == pytest.approx(theirs[key], abs=1e-9), key
    assert ours["best_f1"] == pytest.approx(theirs["final_f1"], abs=1e-9)
    assert ours["best_f1_thresh"] == theirs["final_f1_thresh"]
    assert ours["best_exact"] == pytest.approx(theirs["final_exact"], abs=1e-9)
    assert ours["best_exact_thresh"] == theirs["final_exact_thresh"]
    assert 0 < ours["f1"] < 100 and ours["NoAns_total"] == 5
