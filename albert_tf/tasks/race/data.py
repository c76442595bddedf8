"""RACE reading, 4-choice feature encoding and TFRecords (the original `race_utils.py`).

Layout: `data_dir/RACE/{train,dev,test}/{middle,high}/`. A level directory holds either the concatenated
`all.txt` the original requires (one JSON object per line) or the per-article `*.txt` files of the public RACE
download (one JSON object per file); when `all.txt` is present only it is read, so a directory holding both is
not counted twice. Each object has `id`, `article`, `questions`, `options` (4 per question) and `answers`
(letters A-D; optional for prediction-only data).

Each question becomes one `RaceExample` with 4 endings: `question.replace("_", option)` when the question has a
blank, else `question + " " + option`, after `process_text` (`preprocess_text(text, lower=do_lower_case)` with a
SentencePiece model). Encoding per choice: `[CLS] article [SEP] ending [SEP]`, the ending keeping its **last**
`max_qa_length` tokens and the article truncated to fit `max_seq_length`. TFRecords use the original feature
names (`RACE`), the 4 choices concatenated (`4 * max_seq_length`).
"""

import collections
import json
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.config import TOKEN_INPUTS
from albert_tf import fileio
from albert_tf.text import tokenization
from albert_tf.data import features as features_lib
from albert_tf.data.features import Feature
from albert_tf.data import record_stream as positional
from albert_tf.errors import InputError

LEVELS = ("middle", "high")
SPLITS = ("train", "dev", "test")
LABELS = ("A", "B", "C", "D")
RACE_NUM_CHOICES = 4
NO_LABEL = -1  # `label_ids` of a question without an answer (prediction-only data).

# The TFRecord schema (`race_utils`): the 4 choices concatenated, "choices_seq" = 4 * max_seq_length.
RACE = (
    *features_lib.tokens("choices_seq"),
    Feature("label_ids", tf.int64, "scalar"),
    Feature("is_real_example", tf.int64, "scalar"),
)

RaceExample = collections.namedtuple(
    "RaceExample", ["example_id", "article_id", "question_index", "level", "context", "endings", "label",
                    "source"])
RaceExample.__doc__ = """One RACE question.

Fields: `example_id` (`"<article id>-<question index>"`), `article_id`, `question_index`, `level` (`middle` or
`high`), `context` (processed article), `endings` (4 processed question+option strings), `label` (0-3, or None
when the data has no answers), `source` (file, with `:line` for `all.txt`).
"""


def levels_for(high_only=False, middle_only=False):
    """The levels read under `--high_only` / `--middle_only` (original order: middle, then high)."""
    if high_only and middle_only:
        raise InputError("`high_only` and `middle_only` cannot both be True: no level would be read.")
    if high_only:
        return ("high",)
    if middle_only:
        return ("middle",)
    return LEVELS


def split_dir(data_dir, split):
    """`data_dir/RACE/<split>`; `data_dir` may also be the `RACE` directory itself."""
    if split not in SPLITS:
        raise InputError(f"`split` must be one of {SPLITS}. Received: `split={split!r}`.")
    if data_dir is None:
        raise InputError("`data_dir` is required: the directory that contains `RACE/{train,dev,test}`.")
    candidate = os.path.join(data_dir, "RACE", split)
    if tf.io.gfile.isdir(candidate):
        return candidate
    direct = os.path.join(data_dir, split)
    if os.path.basename(os.path.normpath(data_dir)) == "RACE" and tf.io.gfile.isdir(direct):
        return direct
    raise InputError(f"RACE {split} directory not found: expected `{candidate}` (the layout "
                     f"`data_dir/RACE/{{train,dev,test}}/{{middle,high}}`). Received: `data_dir={data_dir!r}`.")


def level_files(level_dir):
    """The files to read in one level directory: `all.txt` if present, else every `*.txt` (sorted)."""
    if not tf.io.gfile.isdir(level_dir):
        raise InputError(f"RACE level directory not found: `{level_dir}`.")
    names = sorted(n for n in tf.io.gfile.listdir(level_dir) if n.endswith(".txt"))
    if "all.txt" in names:
        return [os.path.join(level_dir, "all.txt")]
    if not names:
        raise InputError(f"RACE level directory `{level_dir}` holds no `.txt` files: expected `all.txt` (one "
                         "JSON object per line) or the per-article `*.txt` files of the RACE download.")
    return [os.path.join(level_dir, n) for n in names]


def _load_objects(path):
    """Yields `(source, object)` for a file: a whole-file JSON object (or array of them), else JSON lines."""
    text = fileio.read_text(path)
    stripped = text.strip()
    if not stripped:
        raise InputError(f"RACE file `{path}` is empty: expected JSON with `article`, `questions`, `options`, "
                         "`answers`.")
    try:
        obj = json.loads(stripped)
        if isinstance(obj, dict):
            yield path, obj
            return
        if isinstance(obj, list) and all(isinstance(o, dict) for o in obj):  # A JSON array of articles.
            for index, item in enumerate(obj):
                yield f"{path}[{index}]", item
            return
    except json.JSONDecodeError:
        pass
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        source = f"{path}:{line_number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"RACE file `{source}` is not valid JSON ({e.msg} at column {e.colno}).") from None
        if not isinstance(obj, dict):
            raise InputError(f"RACE file `{source}`: expected a JSON object, got {type(obj).__name__}.")
        yield source, obj


def examples_from_object(obj, source, level, process_text, require_answers=True):
    """The `RaceExample`s (one per question) of one article object; errors name `source`.

    Args:
        obj: dict with `article`, `questions`, `options` and (unless not required) `answers`; `id` optional
            (defaults to the file name).
        source: str, file (and line) for error messages.
        level: str, `middle` or `high`.
        process_text: callable applied to the article, each question and each option.
        require_answers: bool, raise when `answers` is missing.
    """
    for key in ("article", "questions", "options"):
        if key not in obj:
            raise InputError(f"RACE file `{source}` has no `{key}` field. Keys: {sorted(obj)}.")
    questions, options = obj["questions"], obj["options"]
    answers = obj.get("answers")
    if answers is None and require_answers:
        raise InputError(f"RACE file `{source}` has no `answers` field (needed for training and evaluation).")
    if not isinstance(questions, list) or not isinstance(options, list) or len(options) != len(questions):
        raise InputError(f"RACE file `{source}`: `questions` and `options` must be lists of the same length. "
                         f"Received {_length(questions)} questions and {_length(options)} option lists.")
    if answers is not None and (not isinstance(answers, list) or len(answers) != len(questions)):
        raise InputError(f"RACE file `{source}`: `answers` must be a list with one letter per question. "
                         f"Received {_length(answers)} answers for {len(questions)} questions.")
    if not isinstance(obj["article"], str) or not all(isinstance(q, str) for q in questions):
        raise InputError(f"RACE file `{source}`: expected a string `article` and string `questions`, got "
                         f"{type(obj['article']).__name__} and {sorted({type(q).__name__ for q in questions})}.")
    if "id" in obj and (not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool)):
        raise InputError(f"RACE file `{source}`: expected a string `id`, got {obj['id']!r}.")
    article_id = str(obj.get("id", os.path.basename(source)))  # e.g. `all.txt:7` when there is no `id`
    context = process_text(obj["article"])
    examples = []
    for i, question_text in enumerate(questions):
        if (not isinstance(options[i], list) or len(options[i]) != RACE_NUM_CHOICES
                or not all(isinstance(option, str) for option in options[i])):
            raise InputError(f"RACE file `{source}`, question {i}: expected exactly {RACE_NUM_CHOICES} string "
                             f"options. Received: {options[i]!r}.")
        label = None
        if answers is not None:
            if answers[i] not in LABELS:
                raise InputError(f"RACE file `{source}`, question {i}: the answer must be one of "
                                 f"{', '.join(LABELS)}. Received: {answers[i]!r}.")
            label = ord(answers[i]) - ord("A")
        question = process_text(question_text)
        endings = []
        for option_text in options[i]:
            option = process_text(option_text)
            # A "_" marks the blank of a cloze question; otherwise the option follows the question.
            endings.append(question.replace("_", option) if "_" in question else " ".join([question, option]))
        examples.append(RaceExample(f"{article_id}-{i}", article_id, i, level, context, tuple(endings), label,
                                    source))
    return examples


def _length(value):
    return len(value) if isinstance(value, list) else type(value).__name__


def make_process_text(do_lower_case=True, use_spm=True):
    """The original `RaceProcessor.process_text`: `preprocess_text(text, lower=do_lower_case)` with spm."""
    if not use_spm:
        return lambda text: text if isinstance(text, str) else text.decode("utf-8")
    return lambda text: tokenization.preprocess_text(text, lower=do_lower_case)


def read_race_examples(data_dir, split, do_lower_case=True, high_only=False, middle_only=False, use_spm=True,
                       require_answers=True, process_text=None):
    """Reads the `RaceExample`s of one split, level by level (middle then high, as the original).

    Args:
        data_dir: str, the directory containing `RACE/` (or `RACE/` itself).
        split: str, `train`, `dev` or `test`.
        do_lower_case: bool, lower-case in `preprocess_text`.
        high_only: bool, read only `high`.
        middle_only: bool, read only `middle`.
        use_spm: bool, process text with `preprocess_text` (SentencePiece models); else leave it as is.
        require_answers: bool, raise on a question without an answer.
        process_text: optional callable overriding the text processing.

    Returns:
        A list of `RaceExample`.
    """
    process_text = process_text or make_process_text(do_lower_case, use_spm)
    root = split_dir(data_dir, split)
    examples = []
    for level in levels_for(high_only, middle_only):
        level_dir = os.path.join(root, level)
        count = 0
        for path in level_files(level_dir):
            for source, obj in _load_objects(path):
                new = examples_from_object(obj, source, level, process_text, require_answers)
                examples.extend(new)
                count += len(new)
        if count == 0:
            raise InputError(f"RACE level directory `{level_dir}` holds no questions.")
        logging.info("RACE %s/%s: %d questions", split, level, count)
    return examples


def encode_example(example, tokenizer, max_seq_length, max_qa_length, context_tokens=None):
    """The original `convert_single_example`: 4 lists each of `input_ids`, `input_mask`, `segment_ids`.

    Args:
        example: `RaceExample`.
        tokenizer: object with `tokenize(text)` and `convert_tokens_to_ids(tokens)` (`FullTokenizer`).
        max_seq_length: int, L.
        max_qa_length: int, the question+option keeps its last `max_qa_length` tokens.
        context_tokens: optional precomputed `tokenizer.tokenize(example.context)` (shared by the questions of
            one article).

    Returns:
        `(input_ids, input_mask, segment_ids, tokens)`, each a list of 4 lists (`tokens` for logging).
    """
    if context_tokens is None:
        context_tokens = tokenizer.tokenize(example.context)
    all_ids, all_mask, all_segments, all_tokens = [], [], [], []
    for ending in example.endings:
        ending_tokens = tokenizer.tokenize(ending)[-max_qa_length:]
        if len(ending_tokens) > max_seq_length - 3:
            raise InputError(f"`max_qa_length={max_qa_length}` leaves no room in `max_seq_length="
                             f"{max_seq_length}`: need max_qa_length <= max_seq_length - 3 ({example.source}).")
        context = context_tokens
        # Account for [CLS], [SEP], [SEP] with "- 3"; only the article is shortened.
        if len(context) + len(ending_tokens) > max_seq_length - 3:
            context = context[:max_seq_length - 3 - len(ending_tokens)]
        tokens = ["[CLS]"] + list(context) + ["[SEP]"] + list(ending_tokens) + ["[SEP]"]
        segment_ids = [0] * (len(context) + 2) + [1] * (len(ending_tokens) + 1)
        input_ids = list(tokenizer.convert_tokens_to_ids(tokens))
        input_mask = [1] * len(input_ids)
        padding = [0] * (max_seq_length - len(input_ids))
        all_ids.append(input_ids + padding)
        all_mask.append(input_mask + padding)
        all_segments.append(segment_ids + padding)
        all_tokens.append(tokens)
    return all_ids, all_mask, all_segments, all_tokens


def example_to_tf_example(input_ids, input_mask, segment_ids, label_id, is_real_example=True):
    """A `tf.train.Example` with the original RACE feature names, choices concatenated."""
    feature = collections.OrderedDict()
    feature["input_ids"] = features_lib.int64_feature(sum(input_ids, []))
    feature["input_mask"] = features_lib.int64_feature(sum(input_mask, []))
    feature["segment_ids"] = features_lib.int64_feature(sum(segment_ids, []))
    feature["label_ids"] = features_lib.int64_feature([label_id])
    feature["is_real_example"] = features_lib.int64_feature([int(is_real_example)])
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_race_tfrecord(examples, tokenizer, max_seq_length, max_qa_length, output_file, num_padding=0):
    """Encodes `examples` into `output_file` (written to a temporary name, then renamed).

    Args:
        examples: list of `RaceExample`.
        tokenizer: `FullTokenizer`-like object.
        max_seq_length: int.
        max_qa_length: int.
        output_file: str, TFRecord path.
        num_padding: int, all-zero examples with `is_real_example=0` appended (fixed-size TPU batches).

    Returns:
        The number of records written.
    """
    if max_qa_length > max_seq_length - 3:
        raise InputError(f"`max_qa_length` must be <= `max_seq_length` - 3. Received: `max_qa_length="
                         f"{max_qa_length}`, `max_seq_length={max_seq_length}`.")
    directory = os.path.dirname(output_file)
    if directory:
        tf.io.gfile.makedirs(directory)
    start = time.time()
    cached_context, cached_tokens = None, None
    with fileio.atomic_path(output_file) as tmp_file, tf.io.TFRecordWriter(tmp_file) as writer:
        for index, example in enumerate(examples):
            if example.context is not cached_context and example.context != cached_context:
                cached_context, cached_tokens = example.context, tokenizer.tokenize(example.context)
            ids, mask, segments, tokens = encode_example(example, tokenizer, max_seq_length, max_qa_length,
                                                         cached_tokens)
            label = NO_LABEL if example.label is None else example.label
            writer.write(example_to_tf_example(ids, mask, segments, label).SerializeToString())
            if index < 2:
                logging.info("*** Example %s (label %s) ***\n%s", example.example_id, label,
                             "\n".join(" ".join(t) for t in tokens))
            if index and index % 10000 == 0:
                rate = index / (time.time() - start)
                logging.info("Writing example %d of %d (%.0f examples/s, ETA %.0f s)", index,
                             len(examples), rate, (len(examples) - index) / rate)
        zeros = [[0] * max_seq_length] * RACE_NUM_CHOICES
        for _ in range(num_padding):
            writer.write(example_to_tf_example(zeros, zeros, zeros, 0, False).SerializeToString())
    logging.info("Wrote %d RACE examples (+%d padding) to %s in %.1f s", len(examples), num_padding,
                 output_file, time.time() - start)
    return len(examples) + num_padding


def count_records(path):
    """Number of records in a TFRecord file."""
    return sum(1 for _ in tf.data.TFRecordDataset(path))


def decode_race_record(record, max_seq_length):
    """Parses one serialized record: int32 `input_ids`/`input_mask`/`segment_ids` `[4, seq]`, scalars."""
    spec = features_lib.parse_spec(RACE, choices_seq=RACE_NUM_CHOICES * max_seq_length)
    example = features_lib.cast_int64_to_int32(tf.io.parse_single_example(record, spec))
    for name in TOKEN_INPUTS:
        example[name] = tf.reshape(example[name], [RACE_NUM_CHOICES, max_seq_length])   # [4, seq]
    return example


def race_dataset(input_file, max_seq_length, batch_size, is_training, drop_remainder=False, input_context=None,
                 shuffle_buffer=100, seed=None, start_batch=0):
    """`tf.data` pipeline of the original `file_based_input_fn_builder` for RACE TFRecords.

    Training repeats and shuffles with a buffer of 100 (as the original); with a `seed`, it reads the seeded
    positional stream (`albert_tf.data.record_stream`: seeded file order, shuffle blocks of `shuffle_buffer`) from
    batch `start_batch`. Evaluation keeps the file order.
    Records are reshaped from the flat `[4 * seq]` layout to `[batch, 4, seq]`.

    Args:
        input_file: str, TFRecord path (or comma-separated paths).
        max_seq_length: int, L of the records.
        batch_size: int, per-replica batch size.
        is_training: bool.
        drop_remainder: bool, static batch shapes (TPU).
        input_context: optional `tf.distribute.InputContext` to shard the files' records per input pipeline.
        shuffle_buffer: int.
        seed: int or None, training: the positional stream's seed (None: the original's shuffle buffer).
        start_batch: int, training with a `seed`: the batches to skip (a resumed run's position).
    """
    files = [f for f in str(input_file).split(",") if f]
    for f in files:
        if not tf.io.gfile.exists(f):
            raise InputError(f"RACE TFRecord file not found: `{f}`.")
    d = positional.task_records(files, is_training, batch_size, input_context, shuffle_buffer, seed, start_batch)
    d = d.map(lambda r: decode_race_record(r, max_seq_length), num_parallel_calls=tf.data.AUTOTUNE)
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    return d.prefetch(tf.data.AUTOTUNE)


def accuracy_by_level(predictions, labels, levels, per_example_loss=None):
    """Accuracy (and mean loss) overall and per level; questions without a label are ignored.

    The overall accuracy is the count-weighted mean of the per-level ones:
    `eval_accuracy = sum(n_level * eval_accuracy_level) / sum(n_level)`.

    Args:
        predictions: int array `[n]`, predicted choice 0-3.
        labels: int array `[n]`, gold choice or `NO_LABEL`.
        levels: sequence of `n` level names.
        per_example_loss: optional float array `[n]`.

    Returns:
        dict with `eval_accuracy`, `eval_loss` (if losses given), `num_examples`, and for each level present
        `eval_accuracy_<level>`, `eval_loss_<level>`, `num_examples_<level>`.
    """
    predictions = np.asarray(predictions)
    labels = np.asarray(labels)
    levels = np.asarray(list(levels))
    if not predictions.shape == labels.shape == levels.shape:
        raise InputError(f"`predictions`, `labels`, `levels` must have the same length. Received: "
                         f"{predictions.shape}, {labels.shape}, {levels.shape}.")
    labeled = labels != NO_LABEL
    results = {}

    def fill(mask, suffix):
        n = int(mask.sum())
        results[f"num_examples{suffix}"] = n
        results[f"eval_accuracy{suffix}"] = float((predictions[mask] == labels[mask]).mean()) if n else 0.0
        if per_example_loss is not None:
            results[f"eval_loss{suffix}"] = float(np.asarray(per_example_loss)[mask].mean()) if n else 0.0

    fill(labeled, "")
    for level in LEVELS:
        mask = labeled & (levels == level)
        if mask.any():
            fill(mask, f"_{level}")
    return results
