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
# Adapted from google-research/ALBERT/squad_utils.py: `_convert_index`, `_check_is_max_context` and the
# piece-to-character alignment and doc-span windows of `convert_examples_to_features`. Changes: split into
# functions, Python 3 only, features handed to a callback, eval side-information stored as JSON instead of
# a pickle, atomic output files.
"""SQuAD 1.1 / 2.0 reading and feature conversion, exactly as the original `squad_utils.py`.

The paragraph is tokenized with SentencePiece after `preprocess_text` (NFKD, accents dropped, lower-cased), so
pieces no longer spell the raw text. The original aligns the two by a banded longest-common-subsequence over
characters; answers are mapped to pieces and predicted pieces back to raw character offsets through that
alignment. Everything here reproduces it step by step: the band `|n - m| + 5` with one doubled retry, the
"MISMATCH DETECTED!" skip when fewer than 80% of the raw characters align, `_convert_index` for the gaps,
doc-stride windows, `[CLS] query [SEP] doc [SEP]`, `p_mask`, max-context flags, `[CLS]` targets for impossible
and out-of-window answers, `unique_id` from 1000000000.

Training and prediction features go to TFRecords with the original feature names (`SQUAD`,
`SQUAD_TRAINING`). The prediction side-information the original pickles (`predict_feature_left_file`)
is written here as JSON and never unpickled.
"""

import collections
import dataclasses
import json
import time

from absl import logging
import tensorflow as tf

from albert_tf import fileio
from albert_tf.text import tokenization
from albert_tf.data import features as feature_schema
from albert_tf.data.features import Feature
from albert_tf.data import record_stream as positional
from albert_tf.errors import InputError

SPIECE_UNDERLINE = "\u2581"
UNIQUE_ID_BASE = 1000000000
EVAL_FEATURES_FORMAT = "albert_tf.squad_eval_features"
EVAL_FEATURES_VERSION = 1

# The TFRecord schema (`squad_utils.FeatureWriter`); SQUAD_TRAINING only in training files.
SQUAD = (
    Feature("unique_ids", tf.int64, "scalar"),
    *feature_schema.tokens(),
    Feature("p_mask", tf.int64, "seq"),
)
SQUAD_TRAINING = (
    Feature("start_positions", tf.int64, "scalar"),
    Feature("end_positions", tf.int64, "scalar"),
    Feature("is_impossible", tf.int64, "scalar"),
)


@dataclasses.dataclass
class SquadExample:
    """One question on one paragraph. `start_position` is a character offset into `paragraph_text`
    (-1 for impossible questions, None at prediction time)."""

    qas_id: str
    question_text: str
    paragraph_text: str
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


@dataclasses.dataclass
class InputFeatures:
    """One doc-span window of one example (the original `InputFeatures`).

    `tok_start_to_orig_index`/`tok_end_to_orig_index` map the window's doc pieces to raw character offsets;
    `token_is_max_context` maps positions in `input_ids` to whether this window is the max-context one;
    `tokens` are the pieces of `input_ids` (with `<pad>` pieces, as the original).
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tok_start_to_orig_index: list
    tok_end_to_orig_index: list
    token_is_max_context: dict
    tokens: list
    input_ids: list
    input_mask: list
    segment_ids: list
    paragraph_len: int
    p_mask: list = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = None


@dataclasses.dataclass
class ConversionStats:
    """Counts from `convert_examples_to_features`."""

    num_examples: int = 0
    num_features: int = 0
    num_positive: int = 0
    num_negative: int = 0
    num_mismatch: int = 0


def load_squad_json(input_file):
    """Reads a SQuAD JSON file and returns its `data` list, with errors that name the file and the problem.

    Args:
        input_file: path of a SQuAD 1.1/2.0 JSON file (`{"version": ..., "data": [...]}`).

    Raises:
        ValueError: the file is not JSON (with line and column), or lacks `data`/`paragraphs`/`qas`.
    """
    if not tf.io.gfile.exists(input_file):
        raise InputError(f"SQuAD file `{input_file}` does not exist.")
    text = fileio.read_text(input_file)
    try:
        dataset = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"SQuAD file `{input_file}` is not valid JSON: {e.msg} at line {e.lineno}, "
                         f"column {e.colno}.") from e
    if not isinstance(dataset, dict) or not isinstance(dataset.get("data"), list):
        raise InputError(f"SQuAD file `{input_file}` must be a JSON object with a `data` list "
                         "(the SQuAD 1.1/2.0 layout).")
    for a, article in enumerate(dataset["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise InputError(f"SQuAD file `{input_file}`: `data[{a}]` must be an object with a `paragraphs` list.")
        for p, paragraph in enumerate(article["paragraphs"]):
            if (not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str)
                    or not isinstance(paragraph.get("qas"), list)):
                raise InputError(f"SQuAD file `{input_file}`: `data[{a}].paragraphs[{p}]` must have a string "
                                 "`context` and a `qas` list.")
            for q, qa in enumerate(paragraph["qas"]):
                where = f"`data[{a}].paragraphs[{p}].qas[{q}]`"
                if not isinstance(qa, dict) or "id" not in qa or not isinstance(qa.get("question"), str):
                    raise InputError(f"SQuAD file `{input_file}`: {where} must have an `id` and a string "
                                     "`question`.")
                if not isinstance(qa.get("is_impossible", False), bool):
                    raise InputError(f"SQuAD file `{input_file}`: {where} (id {qa['id']}) `is_impossible` must be "
                                     f"true or false, got {qa['is_impossible']!r}.")
                answers = qa.get("answers", [])
                if not isinstance(answers, list) or not all(isinstance(answer, dict) for answer in answers):
                    raise InputError(f"SQuAD file `{input_file}`: {where} (id {qa['id']}) `answers` must be a "
                                     "list of objects with `text` and `answer_start`.")
    return dataset["data"]


def has_answers(dataset):
    """Whether any question of a loaded SQuAD `data` list carries gold answers (so it can be scored)."""
    return any(qa.get("answers") or "is_impossible" in qa
               for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"])


def read_squad_examples(input_file, is_training, dataset=None):
    """Reads a SQuAD JSON file into `SquadExample`s (`squad_utils.read_squad_examples`).

    For training each question must have exactly one answer unless `is_impossible`. A training answer whose
    text is not found at its `answer_start` in the context is skipped with a warning, and the number skipped
    is logged (the original would silently train on a wrong span).

    Args:
        input_file: path of the SQuAD JSON file (used for reading and in messages).
        is_training: bool, whether to read the answers as training targets.
        dataset: optional already loaded `data` list of `input_file`.

    Returns:
        A list of `SquadExample`.
    """
    if dataset is None:
        dataset = load_squad_json(input_file)
    examples = []
    num_skipped = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            paragraph_text = paragraph["context"]
            for qa in paragraph["qas"]:
                qas_id = qa["id"]
                start_position = None
                orig_answer_text = None
                is_impossible = False
                if is_training:
                    is_impossible = bool(qa.get("is_impossible", False))
                    answers = qa.get("answers", [])
                    if len(answers) != 1 and not is_impossible:
                        raise InputError(
                            f"SQuAD file `{input_file}`, question id {qas_id}: for training, each question "
                            f"should have exactly 1 answer. Received {len(answers)}.")
                    if not is_impossible:
                        answer = answers[0]
                        orig_answer_text = answer.get("text")
                        start_position = answer.get("answer_start")
                        if (not isinstance(orig_answer_text, str) or not orig_answer_text
                                or not isinstance(start_position, int) or start_position < 0
                                or paragraph_text[start_position:start_position + len(orig_answer_text)]
                                != orig_answer_text):
                            logging.warning("Skipping question id %s: answer %r not found in the context at "
                                            "answer_start %r.", qas_id, orig_answer_text, start_position)
                            num_skipped += 1
                            continue
                    else:
                        start_position = -1
                        orig_answer_text = ""
                examples.append(SquadExample(
                    qas_id=qas_id, question_text=qa["question"], paragraph_text=paragraph_text,
                    orig_answer_text=orig_answer_text, start_position=start_position,
                    is_impossible=is_impossible))
    if num_skipped:
        logging.warning("%s: skipped %d of %d training questions whose answer was not found in the context.",
                        input_file, num_skipped, len(examples) + num_skipped)
    logging.info("Read %d examples from %s.", len(examples), input_file)
    return examples


def _convert_index(index, pos, m=None, is_start=True):
    """Maps `pos` through `index`, filling an unaligned position from its aligned neighbours (original)."""
    if index[pos] is not None:
        return index[pos]
    n = len(index)
    rear = pos
    while rear < n - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    assert index[front] is not None or index[rear] is not None
    if index[front] is None:
        if index[rear] >= 1:
            if is_start:
                return 0
            return index[rear] - 1
        return index[rear]
    if index[rear] is None:
        if m is not None and index[front] < m - 1:
            if is_start:
                return index[front] + 1
            return m - 1
        return index[front]
    if is_start:
        if index[rear] > index[front] + 1:
            return index[front] + 1
        return index[rear]
    if index[rear] > index[front] + 1:
        return index[rear] - 1
    return index[front]


def _lcs_match(raw_chars, tok_cat_text, max_dist):
    """Banded LCS table of the original: returns `(f_last, g)`.

    `raw_chars[i]` is `preprocess_text(paragraph_text[i], lower, remove_space=False)` (precomputed: the
    original calls it inside the loop, with the same result). `g[(i, j)]` records the move: 0 = from
    `(i-1, j)`, 1 = from `(i, j-1)`, 2 = match. Cells outside the band keep 0, as in the original's zeroed
    matrix; `f_last` is `f[n-1, m-1]`.
    """
    n, m = len(raw_chars), len(tok_cat_text)
    prev = [0] * m   # f[i-1, :]
    g = {}
    for i in range(n):
        cur = [0] * m
        ch = raw_chars[i]
        for j in range(max(i - max_dist, 0), min(i + max_dist, m)):
            value = 0
            if i > 0:
                g[(i, j)] = 0
                value = prev[j]
            if j > 0 and cur[j - 1] > value:
                g[(i, j)] = 1
                value = cur[j - 1]
            f_prev = prev[j - 1] if i > 0 and j > 0 else 0
            if ch == tok_cat_text[j] and f_prev + 1 > value:
                g[(i, j)] = 2
                value = f_prev + 1
            cur[j] = value
        prev = cur
    return prev[m - 1], g


def _expanded(raw_chars):
    """`(owner, characters)`: the normalised strings of the raw characters, one character each, and the index of
    the raw character each came from."""
    owner = [i for i, chars in enumerate(raw_chars) for _ in chars]
    return owner, [c for chars in raw_chars for c in chars]


def _per_raw_character(expanded_to_chartok, owner, num_raw):
    """Per raw character, the position in the pieces' text of the first aligned character of its expansion."""
    orig_to_chartok_index = [None] * num_raw
    for i in reversed(range(len(expanded_to_chartok))):
        if expanded_to_chartok[i] is not None:
            orig_to_chartok_index[owner[i]] = expanded_to_chartok[i]
    return orig_to_chartok_index


def align_pieces(paragraph_text, para_tokens, do_lower_case, expand_characters=False):
    """Aligns SentencePiece pieces to the raw paragraph characters (the original's LCS alignment).

    Args:
        paragraph_text: the raw context string.
        para_tokens: pieces of `preprocess_text(paragraph_text, lower=do_lower_case)` (`encode_pieces`).
        do_lower_case: bool, as used for the pieces.
        expand_characters: bool. False (the original): each raw character is compared whole with one character
            of the pieces, so a character that normalises to several ("ﬁ" -> "fi", "㎏" -> "kg") never matches
            and a context of many such characters is a mismatch. True (the pipelines): each raw character is
            expanded to its normalised characters, each of which aligns to the raw character it came from, so
            the offsets stay in the raw text.

    Returns:
        None on mismatch (fewer than 80% of raw characters aligned), else a dict with
        `tok_start_to_orig_index`, `tok_end_to_orig_index` (per piece, raw char offsets),
        `orig_to_chartok_index` (per raw char), `chartok_to_tok_index` (per char of the joined pieces).
    """
    preprocess_text = tokenization.preprocess_text
    chartok_to_tok_index = []
    tok_start_to_chartok_index = []
    tok_end_to_chartok_index = []
    char_cnt = 0
    for i, token in enumerate(para_tokens):
        new_token = token.replace(SPIECE_UNDERLINE, " ")
        chartok_to_tok_index.extend([i] * len(new_token))
        tok_start_to_chartok_index.append(char_cnt)
        char_cnt += len(new_token)
        tok_end_to_chartok_index.append(char_cnt - 1)

    tok_cat_text = "".join(para_tokens).replace(SPIECE_UNDERLINE, " ")
    raw_chars = [preprocess_text(c, lower=do_lower_case, remove_space=False) for c in paragraph_text]
    owner = None   # With `expand_characters`: the raw character of each compared character.
    num_raw = len(paragraph_text)
    if expand_characters:
        owner, raw_chars = _expanded(raw_chars)
    n, m = len(raw_chars), len(tok_cat_text)
    if n == 0 or m == 0:
        return None

    max_dist = abs(n - m) + 5
    for _ in range(2):
        f_last, g = _lcs_match(raw_chars, tok_cat_text, max_dist)
        if f_last > 0.8 * n:
            break
        max_dist *= 2

    orig_to_chartok_index = [None] * n
    chartok_to_orig_index = [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        if (i, j) not in g:
            break
        if g[(i, j)] == 2:
            orig_to_chartok_index[i] = j
            chartok_to_orig_index[j] = i if owner is None else owner[i]
            i, j = i - 1, j - 1
        elif g[(i, j)] == 1:
            j = j - 1
        else:
            i = i - 1

    if all(v is None for v in orig_to_chartok_index) or f_last < 0.8 * n:
        return None
    if owner is not None:
        orig_to_chartok_index, n = _per_raw_character(orig_to_chartok_index, owner, num_raw), num_raw

    tok_start_to_orig_index = []
    tok_end_to_orig_index = []
    for i in range(len(para_tokens)):
        tok_start_to_orig_index.append(
            _convert_index(chartok_to_orig_index, tok_start_to_chartok_index[i], n, is_start=True))
        tok_end_to_orig_index.append(
            _convert_index(chartok_to_orig_index, tok_end_to_chartok_index[i], n, is_start=False))
    return {
        "tok_start_to_orig_index": tok_start_to_orig_index,
        "tok_end_to_orig_index": tok_end_to_orig_index,
        "orig_to_chartok_index": orig_to_chartok_index,
        "chartok_to_tok_index": chartok_to_tok_index,
    }


def _check_is_max_context(doc_spans, cur_span_index, position):
    """Whether `cur_span_index` is the window where `position` has the most context (BERT's rule)."""
    best_score = None
    best_span_index = None
    for span_index, doc_span in enumerate(doc_spans):
        end = doc_span.start + doc_span.length - 1
        if position < doc_span.start or position > end:
            continue
        num_left_context = position - doc_span.start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


_DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def _sp_model(tokenizer):
    sp_model = getattr(tokenizer, "sp_model", tokenizer)
    if sp_model is None or not hasattr(sp_model, "PieceToId"):
        raise InputError("`tokenizer` must be a SentencePiece `FullTokenizer` (with `.sp_model`) or a "
                         f"`SentencePieceProcessor`. Received: {type(tokenizer).__name__}.")
    return sp_model


def check_lengths(max_seq_length, max_query_length):
    """The original's `validate_flags_or_throw` rule for the two lengths."""
    if max_seq_length <= max_query_length + 3:
        raise InputError(f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
                         f"({max_query_length}) + 3.")


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                                 is_training, output_fn, do_lower_case, expand_characters=False):
    """Turns examples into doc-span features (`squad_utils.convert_examples_to_features`).

    Args:
        examples: list of `SquadExample`.
        tokenizer: a SentencePiece `FullTokenizer` (or its `sp_model`).
        max_seq_length: int, length of `input_ids`.
        doc_stride: int, stride between windows of a long paragraph.
        max_query_length: int, the question is cut to this many pieces.
        is_training: bool, whether to compute `start_position`/`end_position`/`is_impossible`.
        output_fn: called with each `InputFeatures`.
        do_lower_case: bool, passed to `preprocess_text`.
        expand_characters: bool, `align_pieces`' option (False: the original's alignment).

    Returns:
        `ConversionStats`; examples whose pieces cannot be aligned to the text ("MISMATCH DETECTED!") are
        skipped and counted in `num_mismatch`.
    """
    check_lengths(max_seq_length, max_query_length)
    if doc_stride <= 0:
        raise InputError(f"`doc_stride` must be positive. Received: {doc_stride}.")
    sp_model = _sp_model(tokenizer)
    stats = ConversionStats(num_examples=len(examples))
    unique_id = UNIQUE_ID_BASE
    start_time = time.time()

    for example_index, example in enumerate(examples):
        if example_index % 100 == 0:
            _log_progress(example_index, len(examples), stats, start_time)
        query_tokens = tokenization.encode_ids(
            sp_model, tokenization.preprocess_text(example.question_text, lower=do_lower_case))
        query_tokens = query_tokens[:max_query_length]
        para_tokens = tokenization.encode_pieces(
            sp_model, tokenization.preprocess_text(example.paragraph_text, lower=do_lower_case))
        alignment = align_pieces(example.paragraph_text, para_tokens, do_lower_case, expand_characters)
        if alignment is None:
            logging.info("MISMATCH DETECTED! (question id %s)", example.qas_id)
            stats.num_mismatch += 1
            continue
        answer = _answer_token_span(example, alignment) if is_training else None
        all_doc_tokens = [sp_model.PieceToId(piece) for piece in para_tokens]
        # The -3 accounts for [CLS], [SEP] and [SEP].
        doc_spans = _doc_spans(len(all_doc_tokens), max_seq_length - len(query_tokens) - 3, doc_stride)
        for doc_span_index in range(len(doc_spans)):
            feature = _span_feature(sp_model, example, example_index, query_tokens, all_doc_tokens, alignment,
                                    doc_spans, doc_span_index, answer, unique_id, max_seq_length, is_training)
            output_fn(feature)
            unique_id += 1
            stats.num_features += 1
            if feature.is_impossible:
                stats.num_negative += 1
            else:
                stats.num_positive += 1

    logging.info("Total number of instances: %d = pos %d neg %d", stats.num_features, stats.num_positive,
                 stats.num_negative)
    if stats.num_mismatch:
        logging.warning("Skipped %d of %d examples whose pieces could not be aligned to the text "
                        "(MISMATCH DETECTED).", stats.num_mismatch, len(examples))
    return stats


def _log_progress(example_index, num_examples, stats, start_time):
    elapsed = time.time() - start_time
    rate = example_index / elapsed if elapsed > 0 else 0.0
    eta = (num_examples - example_index) / rate if rate > 0 else float("nan")
    logging.info("Converting %d/%d pos %d neg %d (%.1f examples/s, ETA %.0fs)", example_index,
                 num_examples, stats.num_positive, stats.num_negative, rate, eta)


def _answer_token_span(example, alignment):
    """`(tok_start_position, tok_end_position)` of a training example's answer in the paragraph's pieces
    (`(0, 0)` for an impossible question)."""
    if example.is_impossible:
        return 0, 0
    start_position = example.start_position
    end_position = start_position + len(example.orig_answer_text) - 1
    start_chartok_pos = _convert_index(alignment["orig_to_chartok_index"], start_position, is_start=True)
    tok_start_position = alignment["chartok_to_tok_index"][start_chartok_pos]
    end_chartok_pos = _convert_index(alignment["orig_to_chartok_index"], end_position, is_start=False)
    tok_end_position = alignment["chartok_to_tok_index"][end_chartok_pos]
    assert tok_start_position <= tok_end_position
    return tok_start_position, tok_end_position


def _doc_spans(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """The windows over the paragraph's pieces: at most `max_tokens_for_doc` long, `doc_stride` apart."""
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append(_DocSpan(start=start_offset, length=length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def _span_feature(sp_model, example, example_index, query_tokens, all_doc_tokens, alignment, doc_spans,
                  doc_span_index, answer, unique_id, max_seq_length, is_training):
    """The `InputFeatures` of window `doc_span_index`: `[CLS] query [SEP] window [SEP]`, padded."""
    cls_id, sep_id = sp_model.PieceToId("[CLS]"), sp_model.PieceToId("[SEP]")
    doc_span = doc_spans[doc_span_index]
    # [CLS] query [SEP]: segment 0; p_mask 0 only for [CLS] (the null answer).
    tokens = [cls_id] + list(query_tokens) + [sep_id]
    segment_ids = [0] * len(tokens)
    p_mask = [0] + [1] * (len(query_tokens) + 1)
    token_is_max_context = {}
    cur_tok_start_to_orig_index = []
    cur_tok_end_to_orig_index = []
    for i in range(doc_span.length):
        split_token_index = doc_span.start + i
        cur_tok_start_to_orig_index.append(alignment["tok_start_to_orig_index"][split_token_index])
        cur_tok_end_to_orig_index.append(alignment["tok_end_to_orig_index"][split_token_index])
        token_is_max_context[len(tokens)] = _check_is_max_context(doc_spans, doc_span_index, split_token_index)
        tokens.append(all_doc_tokens[split_token_index])
        segment_ids.append(1)
        p_mask.append(0)
    tokens.append(sep_id)
    segment_ids.append(1)
    p_mask.append(1)
    paragraph_len = len(tokens)

    input_ids = list(tokens)
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    input_ids += [0] * padding
    input_mask += [0] * padding
    segment_ids += [0] * padding
    p_mask += [1] * padding

    span_is_impossible = example.is_impossible
    start_position = end_position = None
    if is_training and not span_is_impossible:
        tok_start_position, tok_end_position = answer
        doc_start = doc_span.start
        doc_end = doc_span.start + doc_span.length - 1
        if tok_start_position >= doc_start and tok_end_position <= doc_end:
            doc_offset = len(query_tokens) + 2
            start_position = tok_start_position - doc_start + doc_offset
            end_position = tok_end_position - doc_start + doc_offset
        else:
            # The original keeps windows without the answer, with [CLS] targets.
            span_is_impossible = True
    if is_training and span_is_impossible:
        start_position = end_position = 0

    if example_index < 20:
        logging.debug("unique_id: %s example_index: %s doc_span_index: %s input_pieces: %s",
                      unique_id, example_index, doc_span_index, " ".join(sp_model.IdToPiece(x) for x in tokens))
    return InputFeatures(
        unique_id=unique_id,
        example_index=None if is_training else example_index,
        doc_span_index=doc_span_index,
        tok_start_to_orig_index=cur_tok_start_to_orig_index,
        tok_end_to_orig_index=cur_tok_end_to_orig_index,
        token_is_max_context=token_is_max_context,
        # The original pads `tokens` itself (`input_ids = tokens` aliases it): pads appear here too.
        tokens=[sp_model.IdToPiece(x) for x in input_ids],
        input_ids=input_ids,
        input_mask=input_mask,
        segment_ids=segment_ids,
        paragraph_len=paragraph_len,
        p_mask=p_mask,
        start_position=start_position,
        end_position=end_position,
        is_impossible=span_is_impossible)


class FeatureWriter:
    """Writes `InputFeatures` as tf.Examples with the original names (`squad_utils.FeatureWriter`).

    The records go to a temporary file (`fileio.atomic_path`) renamed to `filename` by `close()`; `abort()`
    removes it. Usable as a context manager (aborts on an exception).

    Args:
        filename: output TFRecord path.
        is_training: bool, whether to write `start_positions`, `end_positions`, `is_impossible`.
    """

    def __init__(self, filename, is_training):
        self.filename = filename
        self.is_training = is_training
        self.num_features = 0
        self._target = fileio.atomic_path(filename)
        self._writer = tf.io.TFRecordWriter(self._target.__enter__())

    def process_feature(self, feature):
        self.num_features += 1
        values = {
            "unique_ids": [feature.unique_id],
            "input_ids": feature.input_ids,
            "input_mask": feature.input_mask,
            "segment_ids": feature.segment_ids,
            "p_mask": feature.p_mask,
        }
        if self.is_training:
            values.update(start_positions=[feature.start_position], end_positions=[feature.end_position],
                          is_impossible=[1 if feature.is_impossible else 0])
        schema = SQUAD + (SQUAD_TRAINING if self.is_training else ())
        tf_features = collections.OrderedDict(
            (f.name, feature_schema.int64_feature(values[f.name])) for f in schema)
        example = tf.train.Example(features=tf.train.Features(feature=tf_features))
        self._writer.write(example.SerializeToString())

    def close(self):
        self._writer.close()
        self._target.__exit__(None, None, None)

    def abort(self):
        self._writer.close()
        error = RuntimeError(f"Writing `{self.filename}` was aborted.")
        try:
            self._target.__exit__(RuntimeError, error, None)  # Removes the temporary file.
        except RuntimeError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


# Kept under this module's name for its callers (`albert_tf.tasks.squad.task`).
write_text_atomic = fileio.write_text_atomic


_EVAL_FIELDS = ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                "tok_end_to_orig_index", "tokens", "paragraph_len")


def write_eval_features(features, path, metadata=None):
    """Stores what postprocessing needs of the eval features as JSON (the original pickles them).

    `input_ids`, `input_mask`, `segment_ids`, `p_mask` are not stored: they live in the predict TFRecord.

    Args:
        features: list of `InputFeatures`.
        path: output JSON path (written to a temporary name, then renamed).
        metadata: optional dict (conversion settings), checked by `read_eval_features`.
    """
    records = []
    for feature in features:
        record = {name: getattr(feature, name) for name in _EVAL_FIELDS}
        # `tokens` carries the padding pieces (as the original); store them as a count to keep the file small.
        record["tokens"] = feature.tokens[:feature.paragraph_len]
        padding = feature.tokens[feature.paragraph_len:]
        if len(set(padding)) > 1:
            raise InputError(f"Feature {feature.unique_id}: `tokens` after `paragraph_len` must all be padding.")
        record["padding"] = [padding[0], len(padding)] if padding else None
        # JSON object keys are strings: store max-context flags as [position, flag] pairs.
        record["token_is_max_context"] = [[int(k), bool(v)] for k, v in feature.token_is_max_context.items()]
        records.append(record)
    payload = {"format": EVAL_FEATURES_FORMAT, "version": EVAL_FEATURES_VERSION,
               "metadata": metadata or {}, "features": records}
    write_text_atomic(path, json.dumps(payload))


def read_eval_features(path, expected_metadata=None):
    """Reads a file written by `write_eval_features`; never unpickles anything.

    Args:
        path: the JSON file.
        expected_metadata: optional dict; every key present in it must equal the stored value.

    Returns:
        A list of `InputFeatures` (without `input_ids`/`input_mask`/`segment_ids`/`p_mask`).

    Raises:
        ValueError: the file is not such a JSON file (e.g. an original pickle) or was made with other settings.
    """
    with tf.io.gfile.GFile(path, "rb") as reader:
        raw = reader.read()
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"`predict_feature_left_file` {path} is not a JSON eval-feature file written by "
                         "albert_tf (the original release pickles this file; pickles are never loaded). Delete "
                         "it to have it regenerated.") from e
    if not isinstance(payload, dict) or payload.get("format") != EVAL_FEATURES_FORMAT:
        raise InputError(f"`predict_feature_left_file` {path} is JSON but not an albert_tf eval-feature file "
                         f"(expected `format` = {EVAL_FEATURES_FORMAT!r}).")
    if payload.get("version") != EVAL_FEATURES_VERSION:
        raise InputError(f"`predict_feature_left_file` {path} has version {payload.get('version')}, expected "
                         f"{EVAL_FEATURES_VERSION}.")
    stored = payload.get("metadata", {})
    for key, value in (expected_metadata or {}).items():
        if key in stored and stored[key] != value:
            raise InputError(f"`predict_feature_left_file` {path} was made with {key}={stored[key]!r}, but this "
                             f"run uses {key}={value!r}. Delete it and `predict_feature_file` to regenerate.")
    features = []
    for record in payload["features"]:
        if record.get("padding"):
            pad_piece, num_padding = record["padding"]
            record["tokens"] = record["tokens"] + [pad_piece] * num_padding
        features.append(InputFeatures(
            token_is_max_context={int(k): bool(v) for k, v in record["token_is_max_context"]},
            input_ids=None, input_mask=None, segment_ids=None,
            **{name: record[name] for name in _EVAL_FIELDS}))
    return features


def squad_dataset(input_file, seq_length, is_training, batch_size, drop_remainder, is_v2=True,
                  input_context=None, shuffle_buffer=100, seed=None, start_batch=0):
    """`tf.data` over a SQuAD feature TFRecord (`squad_utils.input_fn_builder`), int32 features.

    Training repeats and shuffles (buffer 100, as the original); with a `seed`, it reads the seeded positional
    stream (`albert_tf.data.record_stream`, shuffle blocks of `shuffle_buffer`) from batch `start_batch`.
    `p_mask` is parsed for v2 only.

    Args:
        input_file: TFRecord path (or list of paths).
        seq_length: int, `max_seq_length` of the file.
        is_training: bool.
        batch_size: int, per-replica batch size.
        drop_remainder: bool.
        is_v2: bool, parse `p_mask`.
        input_context: optional `tf.distribute.InputContext` (shards by input pipeline).
        shuffle_buffer: int.
        seed: int or None, training: the positional stream's seed (None: the original's shuffle buffer).
        start_batch: int, training with a `seed`: the batches to skip (a resumed run's position).
    """
    schema = SQUAD
    if not is_v2:
        schema = tuple(f for f in schema if f.name != "p_mask")
    if is_training:
        schema = schema + SQUAD_TRAINING
    spec = feature_schema.parse_spec(schema, seq=seq_length)
    d = positional.task_records(input_file, is_training, batch_size, input_context, shuffle_buffer, seed,
                                start_batch)
    d = d.map(lambda record: feature_schema.cast_int64_to_int32(tf.io.parse_single_example(record, spec)),
              num_parallel_calls=tf.data.AUTOTUNE)
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    return d.prefetch(tf.data.AUTOTUNE)
