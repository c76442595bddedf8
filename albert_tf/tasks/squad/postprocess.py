# coding=utf-8
# Copyright 2018 The Google AI Team Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
#
# Adapted from google-research/ALBERT/squad_utils.py (`write_predictions_v1`/`_v2`, `accumulate_predictions_v1`/
# `_v2`) and the official SQuAD evaluation scripts it copies (`evaluate-v1.1.py`, `evaluate-v2.0.py`).
# Changes: Python 3 only, functions instead of module-level state, atomic output files.
"""SQuAD post-processing and metrics, as the original `squad_utils.py`.

v1: per feature the `n_best_size` best start and end logits, valid (start, end) pairs (inside the doc, start at a
max-context token, `end >= start`, at most `max_answer_length` pieces), scores averaged over duplicate pairs,
text cut from the raw paragraph by the alignment offsets. v2: the same over the `start_n_top * end_n_top` beam
of the XLNet-style head; the null score of an example is the minimum `cls_logits` over its features and an
answer is replaced by "" when `score_diff >= null_score_diff_threshold`. `evaluate_v2` runs the original's
two passes: no threshold, then the official script's best-F1 threshold found on the same data.

The metric functions are the official SQuAD v1.1 and v2.0 evaluation scripts (`evaluate-v1.1.py`,
`evaluate-v2.0.py`), which the original copies into `squad_utils`.
"""

import collections
import json
import math
import re
import string

from absl import logging

from albert_tf import fileio
from albert_tf.errors import InputError

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_log_prob", "end_log_prob"])
RawResultV2 = collections.namedtuple(
    "RawResultV2",
    ["unique_id", "start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits"])

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_log_prob", "end_log_prob"])
_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_log_prob", "end_log_prob"])


def _get_best_indexes(logits, n_best_size):
    """Indexes of the `n_best_size` largest values (stable for ties, as the original's `sorted`)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def _compute_softmax(scores):
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total = sum(exp_scores)
    return [x / total for x in exp_scores]


def _group_features(all_features, all_results):
    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)
    unique_id_to_result = {int(result.unique_id): result for result in all_results}
    missing = [f.unique_id for f in all_features if f.unique_id not in unique_id_to_result]
    if missing:
        raise InputError(f"No model result for {len(missing)} of {len(all_features)} features (first unique_id "
                         f"{missing[0]}): the predict TFRecord and `predict_feature_left_file` do not match.")
    return example_index_to_features, unique_id_to_result


def _add_span(result_dict, example_index, unique_id, start_idx, end_idx, start_log_prob, end_log_prob):
    spans = result_dict[example_index][unique_id]
    spans.setdefault((start_idx, end_idx), []).append((start_log_prob, end_log_prob))


def _is_valid_span(feature, start_index, end_index, doc_offset, max_answer_length):
    """Whether positions `start_index`..`end_index` of `feature` are a span the original keeps: both before the
    end of the doc's pieces, the start at a token whose max-context window this is, `end >= start`, at most
    `max_answer_length` pieces."""
    return (start_index - doc_offset < len(feature.tok_start_to_orig_index)
            and end_index - doc_offset < len(feature.tok_end_to_orig_index)
            and feature.token_is_max_context.get(start_index, False)
            and start_index <= end_index < start_index + max_answer_length)


def accumulate_predictions_v1(result_dict, all_examples, all_features, all_results, n_best_size,
                              max_answer_length):
    """Collects valid (start, end) spans and their scores per example and feature into `result_dict`."""
    example_index_to_features, unique_id_to_result = _group_features(all_features, all_results)
    for example_index, _ in enumerate(all_examples):
        result_dict.setdefault(example_index, {})
        for feature in example_index_to_features[example_index]:
            result_dict[example_index].setdefault(feature.unique_id, {})
            result = unique_id_to_result[feature.unique_id]
            start_indexes = _get_best_indexes(result.start_log_prob, n_best_size)
            end_indexes = _get_best_indexes(result.end_log_prob, n_best_size)
            doc_offset = feature.tokens.index("[SEP]") + 1
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if not _is_valid_span(feature, start_index, end_index, doc_offset, max_answer_length):
                        continue
                    _add_span(result_dict, example_index, feature.unique_id, start_index - doc_offset,
                              end_index - doc_offset, result.start_log_prob[start_index],
                              result.end_log_prob[end_index])


def prelim_predictions(result_dict, example_index, features):
    """The candidate spans of example `example_index` over its `features`, from `result_dict`: the original's
    `_PrelimPrediction`s (log-probabilities averaged over the windows that scored a span), best first."""
    prelim = []
    for feature_index, feature in enumerate(features):
        for (start_idx, end_idx), logprobs in result_dict[example_index][feature.unique_id].items():
            prelim.append(_PrelimPrediction(
                feature_index=feature_index, start_index=start_idx, end_index=end_idx,
                start_log_prob=sum(lp[0] for lp in logprobs) / len(logprobs),
                end_log_prob=sum(lp[1] for lp in logprobs) / len(logprobs)))
    return sorted(prelim, key=lambda x: x.start_log_prob + x.end_log_prob, reverse=True)


def _nbest(prelim, features, example, n_best_size):
    seen = set()
    nbest = []
    for pred in prelim:
        if len(nbest) >= n_best_size:
            break
        feature = features[pred.feature_index]
        start_orig_pos = feature.tok_start_to_orig_index[pred.start_index]
        end_orig_pos = feature.tok_end_to_orig_index[pred.end_index]
        final_text = example.paragraph_text[start_orig_pos:end_orig_pos + 1].strip()
        if final_text in seen:
            continue
        seen.add(final_text)
        nbest.append(_NbestPrediction(text=final_text, start_log_prob=pred.start_log_prob,
                                      end_log_prob=pred.end_log_prob))
    return nbest


def _example_nbest(result_dict, example_index, features, example, n_best_size, empty):
    """The n-best predictions of example `example_index` over its `features`, or `[empty]` when it has no
    valid span."""
    prelim = prelim_predictions(result_dict, example_index, features) if features else []
    return _nbest(prelim, features, example, n_best_size) or [empty]


def _nbest_json(nbest):
    probs = _compute_softmax([e.start_log_prob + e.end_log_prob for e in nbest])
    return [collections.OrderedDict([("text", e.text), ("probability", probs[i]),
                                     ("start_log_prob", float(e.start_log_prob)),
                                     ("end_log_prob", float(e.end_log_prob))])
            for i, e in enumerate(nbest)]


def write_json(obj, path):
    """`json.dumps(obj, indent=4) + "\\n"` as the original, to a temporary name then renamed."""
    fileio.write_text_atomic(path, json.dumps(obj, indent=4) + "\n")


def _write_predictions(all_predictions, all_nbest_json, output_prediction_file, output_nbest_file):
    """Writes `predictions.json` and `nbest_predictions.json` where their paths are given."""
    if output_prediction_file:
        logging.info("Writing predictions to: %s", output_prediction_file)
        write_json(all_predictions, output_prediction_file)
    if output_nbest_file:
        logging.info("Writing nbest to: %s", output_nbest_file)
        write_json(all_nbest_json, output_nbest_file)


def write_predictions_v1(result_dict, all_examples, all_features, all_results, n_best_size,
                         output_prediction_file=None, output_nbest_file=None):
    """v1 n-best and best answer per question; writes `predictions.json` and `nbest_predictions.json`.

    Returns:
        `(all_predictions, all_nbest_json)`: `{qas_id: text}` and `{qas_id: [n-best entries]}`.
    """
    example_index_to_features, _ = _group_features(all_features, all_results)
    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    for example_index, example in enumerate(all_examples):
        # "empty": the original's nonce prediction for an example without any valid span.
        nbest = _example_nbest(result_dict, example_index, example_index_to_features[example_index], example,
                               n_best_size, _NbestPrediction(text="empty", start_log_prob=0.0, end_log_prob=0.0))
        nbest_json = _nbest_json(nbest)
        all_predictions[example.qas_id] = nbest_json[0]["text"]
        all_nbest_json[example.qas_id] = nbest_json
    _write_predictions(all_predictions, all_nbest_json, output_prediction_file, output_nbest_file)
    return all_predictions, all_nbest_json


def accumulate_predictions_v2(result_dict, cls_dict, all_examples, all_features, all_results, n_best_size,
                              max_answer_length, start_n_top, end_n_top):
    """Collects the beam's valid spans into `result_dict` and each example's null score into `cls_dict`.

    The null score of an example is the minimum `cls_logits` over its features (1000000 if it has none).
    `n_best_size` is unused, as in the original (the beam bounds the candidates).
    """
    del n_best_size
    example_index_to_features, unique_id_to_result = _group_features(all_features, all_results)
    for example_index, _ in enumerate(all_examples):
        result_dict.setdefault(example_index, {})
        score_null = 1000000  # Large and positive.
        for feature in example_index_to_features[example_index]:
            result_dict[example_index].setdefault(feature.unique_id, {})
            result = unique_id_to_result[feature.unique_id]
            score_null = min(score_null, float(result.cls_logits))
            doc_offset = feature.tokens.index("[SEP]") + 1
            for i in range(start_n_top):
                for j in range(end_n_top):
                    start_log_prob = result.start_top_log_probs[i]
                    start_index = int(result.start_top_index[i])
                    j_index = i * end_n_top + j
                    end_log_prob = result.end_top_log_probs[j_index]
                    end_index = int(result.end_top_index[j_index])
                    if start_index < doc_offset or not _is_valid_span(feature, start_index, end_index, doc_offset,
                                                                      max_answer_length):
                        continue
                    _add_span(result_dict, example_index, feature.unique_id, start_index - doc_offset,
                              end_index - doc_offset, float(start_log_prob), float(end_log_prob))
        cls_dict.setdefault(example_index, []).append(score_null)


def write_predictions_v2(result_dict, cls_dict, all_examples, all_features, all_results, n_best_size,
                         output_prediction_file=None, output_nbest_file=None, output_null_log_odds_file=None,
                         null_score_diff_threshold=None):
    """v2 predictions: best span, or "" when `score_diff >= null_score_diff_threshold` (None: never).

    `score_diff` of an example is the mean of its `cls_dict` entries. Writes `predictions.json`,
    `nbest_predictions.json` and `null_odds.json` (`{qas_id: score_diff}`) when paths are given.

    Returns:
        `(all_predictions, scores_diff_json, all_nbest_json)`.
    """
    example_index_to_features, _ = _group_features(all_features, all_results)
    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()
    for example_index, example in enumerate(all_examples):
        nbest = _example_nbest(result_dict, example_index, example_index_to_features[example_index], example,
                               n_best_size, _NbestPrediction(text="", start_log_prob=-1e6, end_log_prob=-1e6))
        nbest_json = _nbest_json(nbest)
        best_non_null_entry = nbest[0]
        score_diff = sum(cls_dict[example_index]) / len(cls_dict[example_index])
        scores_diff_json[example.qas_id] = score_diff
        if null_score_diff_threshold is None or score_diff < null_score_diff_threshold:
            all_predictions[example.qas_id] = best_non_null_entry.text
        else:
            all_predictions[example.qas_id] = ""
        all_nbest_json[example.qas_id] = nbest_json
    _write_predictions(all_predictions, all_nbest_json, output_prediction_file, output_nbest_file)
    if output_null_log_odds_file:
        write_json(scores_diff_json, output_null_log_odds_file)
    return all_predictions, scores_diff_json, all_nbest_json


# ---------------------------------------------------------------------------------------------------------------
# Official SQuAD v1.1 evaluation (evaluate-v1.1.py).


def normalize_answer_v1(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    s = s.lower()
    exclude = set(string.punctuation)
    s = "".join(ch for ch in s if ch not in exclude)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _token_f1(prediction_tokens, ground_truth_tokens):
    """The F1 of the tokens the two lists share (counted with repeats), both scripts' formula; 0 with none."""
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score_v1(prediction, ground_truth):
    return _token_f1(normalize_answer_v1(prediction).split(), normalize_answer_v1(ground_truth).split())


def exact_match_score_v1(prediction, ground_truth):
    return normalize_answer_v1(prediction) == normalize_answer_v1(ground_truth)


def evaluate_v1(dataset, predictions):
    """Official v1.1 `exact_match` and `f1` (in %) of `{qas_id: text}` over a SQuAD `data` list."""
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    logging.warning("Unanswered question %s will receive score 0.", qa["id"])
                    continue
                ground_truths = [x["text"] for x in qa["answers"]]
                if not ground_truths:
                    continue
                prediction = predictions[qa["id"]]
                exact_match += max(exact_match_score_v1(prediction, gt) for gt in ground_truths)
                f1 += max(f1_score_v1(prediction, gt) for gt in ground_truths)
    if total == 0:
        raise InputError("The SQuAD dataset has no questions to evaluate.")
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# ---------------------------------------------------------------------------------------------------------------
# Official SQuAD v2.0 evaluation (evaluate-v2.0.py).


def make_qid_to_has_ans(dataset):
    return {qa["id"]: bool(qa["answers"]) for article in dataset for p in article["paragraphs"]
            for qa in p["qas"]}


def normalize_answer_v2(s):
    """Lower text and remove punctuation, articles and extra whitespace: `normalize_answer_v1` (the v2.0
    script's `re.UNICODE` is what Python 3 does for a text pattern anyway)."""
    return normalize_answer_v1(s)


def get_tokens(s):
    if not s:
        return []
    return normalize_answer_v2(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer_v2(a_gold) == normalize_answer_v2(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise.
        return int(gold_toks == pred_toks)
    return _token_f1(pred_toks, gold_toks)


def get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for article in dataset:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                gold_answers = [a["text"] for a in qa["answers"] if normalize_answer_v2(a["text"])]
                if not gold_answers:
                    # For unanswerable questions, only correct answer is empty string.
                    gold_answers = [""]
                if qid not in preds:
                    logging.warning("Missing prediction for %s", qid)
                    continue
                a_pred = preds[qid]
                exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        if na_probs[qid] > na_prob_thresh:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ("exact", 100.0 * sum(exact_scores.values()) / total),
            ("f1", 100.0 * sum(f1_scores.values()) / total),
            ("total", total)])
    total = len(qid_list)
    return collections.OrderedDict([
        ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ("total", total)])


def merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval[f"{prefix}_{k}"] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval["best_exact"] = best_exact
    main_eval["best_exact_thresh"] = exact_thresh
    main_eval["best_f1"] = best_f1
    main_eval["best_f1_thresh"] = f1_thresh


def squad_v2_eval(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    """The official v2.0 script's main evaluation: `exact`, `f1`, `total`, `HasAns_*`, `NoAns_*`, `best_*`.

    Args:
        dataset: SQuAD `data` list.
        preds: `{qas_id: text}` ("" = no answer).
        na_probs: `{qas_id: no-answer score}`, defaults to 0.0 for all.
        na_prob_thresh: float, predictions with a no-answer score above it count as "".
    """
    if na_probs is None:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    if not exact_raw:
        raise InputError("No predicted question of the SQuAD dataset to evaluate.")
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids), "HasAns")
    if no_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids), "NoAns")
    find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return out_eval


def evaluate_v2(result_dict, cls_dict, dataset, all_examples, all_features, all_results, n_best_size,
                output_prediction_file=None, output_nbest_file=None, output_null_log_odds_file=None,
                null_score_diff_threshold=None):
    """The original `evaluate_v2`, plus a fixed-threshold mode.

    Without `null_score_diff_threshold`: pass 1 writes predictions with no threshold, the official v2
    evaluation (`na_probs` = the cls-logit score diffs, `na_prob_thresh` 1.0) gives `best_f1_thresh`, pass 2
    rewrites the predictions with it (tuned on this same data, as the original). With a threshold: one pass.

    Returns:
        The official v2 metrics of the final predictions (`exact`, `f1`, `total`, `HasAns_*`, `NoAns_*`,
        `best_*`) plus `null_score_diff_threshold`.
    """
    if null_score_diff_threshold is None:
        predictions, na_probs, _ = write_predictions_v2(
            result_dict, cls_dict, all_examples, all_features, all_results, n_best_size,
            output_prediction_file, output_nbest_file, output_null_log_odds_file, None)
        first_pass = squad_v2_eval(dataset, predictions, na_probs, na_prob_thresh=1.0)
        null_score_diff_threshold = first_pass["best_f1_thresh"]
    predictions, na_probs, _ = write_predictions_v2(
        result_dict, cls_dict, all_examples, all_features, all_results, n_best_size,
        output_prediction_file, output_nbest_file, output_null_log_odds_file, null_score_diff_threshold)
    out_eval = squad_v2_eval(dataset, predictions, na_probs, na_prob_thresh=1.0)
    out_eval["null_score_diff_threshold"] = null_score_diff_threshold
    return out_eval
