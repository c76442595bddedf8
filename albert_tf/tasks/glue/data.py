"""GLUE processors, feature conversion and cached TFRecords, as the original `classifier_utils.py`.

Processors read `data_dir/<DIR>/<file>.tsv` with `csv.reader(delimiter="\\t", quotechar=None)` and take the
same columns, skip the same header rows and produce the same guids and labels as the original
processors. tf-models-official's `classifier_data_lib` processors were not reused: they read
TFDS, number guids `"<set>-<i>"` where the original takes the file's index column (which the GLUE
leaderboard files need), and give STS-B test labels 0.0 instead of 0.

Where the original crashes with an `IndexError`/`KeyError` (a row with too few columns, an unknown label)
or silently reads the wrong columns (a row with a stray or a lost tab), this module raises an `InputError`
naming the file, the 1-based line and what was expected: every row must have its header's number of columns.
QQP train/dev rows with missing columns are skipped, as the original does.

Feature conversion is `convert_single_example`: `[CLS] a [SEP] (b [SEP])`, pairs truncated from the longer
sequence's end to `max_seq_length - 3`, single sentences to `max_seq_length - 2`, zero padding.
TFRecords use the original feature names (`label_ids` float32 for STS-B) and are written atomically.
"""

import csv
import io
import os
import time
from typing import NamedTuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import fileio
from albert_tf.text import packing, tokenization
from albert_tf.data import features as features_lib
from albert_tf.data.features import Feature
from albert_tf.data import record_stream as positional
from albert_tf.errors import InputError

# The TFRecord schema (`classifier_utils.file_based_convert_examples_to_features`): label_ids is float32 for STS-B.
CLASSIFIER = (
    *features_lib.tokens(),
    Feature("label_ids", tf.int64, "scalar"),
    Feature("is_real_example", tf.int64, "scalar"),
)


class InputExample:
    """One train/dev/test example.

    Args:
        guid: str, unique id; for test sets (and most dev sets) the file's index column, used in submissions.
        text_a: str, first sequence (already `process_text`-ed).
        text_b: str or None, second sequence for pair tasks.
        label: str label, float for STS-B, or None.
    """

    def __init__(self, guid, text_a, text_b=None, label=None):
        self.guid = guid
        self.text_a = text_a
        self.text_b = text_b
        self.label = label

    def __repr__(self):
        return (f"InputExample(guid={self.guid!r}, text_a={self.text_a!r}, text_b={self.text_b!r}, "
                f"label={self.label!r})")


class PaddingInputExample:
    """Fake example that pads eval/predict sets to a multiple of the batch size (TPU); `is_real_example=0`."""


class InputFeatures:
    """Features of one example (lists of `max_seq_length` ints, an int or float label id)."""

    def __init__(self, input_ids, input_mask, segment_ids, label_id, guid=None, is_real_example=True):
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_id = label_id
        self.guid = guid
        self.is_real_example = is_real_example


class DataProcessor:
    """Base class of the GLUE processors.

    Subclasses set `DIR`, `TRAIN_FILE`, `DEV_FILE`, `TEST_FILE`, `LABELS`, `LEADERBOARD_FILE`, `TEST_LABEL` and
    the row layouts `LAYOUT` (train and dev sets) and `TEST_LAYOUT` (`RowLayout`s); `_create_examples` reads
    every task with them.

    Args:
        use_spm: bool, texts go through `preprocess_text(lower=do_lower_case)` (the original's
            `process_text` when `--spm_model_file` is set); otherwise they are only decoded to str.
        do_lower_case: bool.
    """

    DIR = None
    TRAIN_FILE = "train.tsv"
    DEV_FILE = "dev.tsv"
    TEST_FILE = "test.tsv"
    LABELS = ()
    LEADERBOARD_FILE = None
    # Set names passed to `_create_examples` (the original's `set_type` strings).
    TRAIN_SET, DEV_SET, TEST_SET = "train", "dev", "test"
    # The placeholder label of the (unlabelled) test set, as the original.
    TEST_LABEL = "0"
    LAYOUT = None
    TEST_LAYOUT = None

    def __init__(self, use_spm=True, do_lower_case=True):
        self.use_spm = use_spm
        self.do_lower_case = do_lower_case

    # --- public API ---

    def get_train_examples(self, data_dir):
        """`InputExample`s of the train set."""
        return self._examples(data_dir, self.TRAIN_FILE, self.TRAIN_SET)

    def get_dev_examples(self, data_dir):
        """`InputExample`s of the dev set."""
        return self._examples(data_dir, self.DEV_FILE, self.DEV_SET)

    def get_test_examples(self, data_dir):
        """`InputExample`s of the (unlabelled) test set, with the original's placeholder labels."""
        return self._examples(data_dir, self.TEST_FILE, self.TEST_SET)

    def get_labels(self):
        """The label list; index = label id. `[None]` for STS-B (regression)."""
        return list(self.LABELS)

    @property
    def is_regression(self):
        return self.get_labels() == [None]

    def process_text(self, text):
        if self.use_spm:
            return tokenization.preprocess_text(text, lower=self.do_lower_case)
        return text if isinstance(text, str) else text.decode("utf-8", "ignore")

    # --- helpers ---

    def _create_examples(self, lines, set_type, path):
        """The `InputExample`s of the rows `lines` of file `path`, read with the split's `RowLayout`.

        Every row must have the header's number of columns (`layout.width` for headerless files): a row with a
        column too many or too few (a stray tab, a lost one) is an `InputError` naming `path:line`, where the
        original reads the wrong columns without a word. QQP's short train/dev rows are skipped as the original.
        """
        layout = self.TEST_LAYOUT if set_type == self.TEST_SET else self.LAYOUT
        width = self._row_width(layout, lines, path)
        examples = []
        skipped = 0
        for i, line in enumerate(lines):
            if i == 0 and layout.header:
                continue
            if len(line) != width and not (layout.skip_short and len(line) < width):
                raise InputError(f"{path}:{i + 1}: expected {width} tab-separated columns "
                                 f"({'as the header' if layout.header else 'the task layout'}), got {len(line)}"
                                 f": {_shorten(line)}")
            example = self._create_example(layout, line, set_type, i, path)
            if example is None:
                skipped += 1
            else:
                examples.append(example)
        if not examples:
            raise InputError(f"{path}:{len(lines) + 1}: expected at least one example row, got none.")
        if skipped:
            logging.info("%s: skipped %d row(s) with fewer than %d columns (as the original).", path, skipped,
                         layout.width)
        return examples

    @staticmethod
    def _row_width(layout, lines, path):
        """The number of columns every row of the file must have: the header's, else the layout's."""
        needed = layout.last_column_label[0] if layout.last_column_label else layout.width
        if not layout.header:
            return needed
        if not lines:
            raise InputError(f"{path}:1: expected a header row of at least {needed} tab-separated columns, got "
                             "an empty file.")
        if len(lines[0]) < needed:
            raise InputError(f"{path}:1: expected a header row of at least {needed} tab-separated columns, got "
                             f"{len(lines[0])}: {_shorten(lines[0])}")
        return len(lines[0])

    def _create_example(self, layout, line, set_type, i, path):
        """Row `i` (0-based) as an `InputExample`, or None for a short row that `layout.skip_short` skips."""
        n = i + 1
        fields = {"guid": "%s-%s" % (set_type, i), "text_b": None, "label": self.TEST_LABEL}
        for field, name, index, *width in layout.columns:
            if not width and layout.skip_short and len(line) < layout.width:
                return None
            value = self._column(line, index, path, n, width[0] if width else layout.width,
                                 f"{name} column {index}")
            if field == "label" or (field == "guid" and layout.raw_guid):
                fields[field] = value
            else:
                fields[field] = self.process_text(value)
        if layout.last_column_label:
            needed, what = layout.last_column_label
            if len(line) < needed:
                self._column(line, needed - 1, path, n, needed, what)
            fields["label"] = line[-1]
        if layout.last_column_label or any(column[0] == "label" for column in layout.columns):
            fields["label"] = self._parse_label(fields["label"], path, n)
        return InputExample(**fields)

    def _parse_label(self, value, path, line_number):
        """The label of a train/dev row from its label column."""
        return self._check_label(self.process_text(value), path, line_number)

    def _examples(self, data_dir, filename, set_type):
        if filename is None:
            raise InputError(f"Task directory `{self.DIR}` has no {set_type} split in the original "
                             f"(`{type(self).__name__}`).")
        path = task_file(data_dir, self.DIR, filename)
        return self._create_examples(read_tsv(path), set_type, path)

    @staticmethod
    def _column(line, index, path, line_number, needed, what):
        """`line[index]`, or a ValueError naming the file and line when the row is too short."""
        try:
            return line[index]
        except IndexError:
            raise InputError(
                f"{path}:{line_number}: row has {len(line)} tab-separated column(s); expected at least "
                f"{needed} ({what}). Row: {line!r}") from None

    def _check_label(self, label, path, line_number):
        labels = self.get_labels()
        if label not in labels:
            raise InputError(f"{path}:{line_number}: unknown label {label!r}; expected one of {labels}.")
        return label


def task_file(data_dir, dirname, filename):
    """`data_dir/dirname/filename`, or a ValueError naming what is missing."""
    if not data_dir:
        raise InputError(f"`data_dir` must be set. Received: {data_dir!r}.")
    if not tf.io.gfile.isdir(data_dir):
        raise InputError(f"`data_dir` {data_dir!r} is not a directory.")
    task_dir = os.path.join(data_dir, dirname)
    if not tf.io.gfile.isdir(task_dir):
        raise InputError(f"Task directory {task_dir!r} not found: `data_dir` must contain the GLUE "
                         f"`{dirname}/` folder. Found: {sorted(tf.io.gfile.listdir(data_dir))}.")
    path = os.path.join(task_dir, filename)
    if not tf.io.gfile.exists(path):
        raise InputError(f"File {path!r} not found. Found in {task_dir!r}: "
                         f"{sorted(tf.io.gfile.listdir(task_dir))}.")
    return path


def read_tsv(path, quotechar=None):
    """All rows of a tab-separated UTF-8 file, as the original `_read_tsv` (no quoting).

    Bytes that are not UTF-8 and rows the `csv` module refuses are `InputError`s naming `path:line`.
    """
    # Lines end at "\n" only, as the original's `GFile` iteration.
    text = fileio.read_text(path, lines=True)
    reader = csv.reader(io.StringIO(text, newline="\n"), delimiter="\t", quotechar=quotechar)
    rows = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as e:
        raise InputError(f"{path}:{reader.line_num}: expected a tab-separated row, got: {e}") from None
    return rows


def _shorten(row, limit=160):
    text = repr(row)
    return text if len(text) <= limit else text[:limit - 5] + " ...]"


class RowLayout(NamedTuple):
    """Where a split's fields are in its TSV rows.

    Attributes:
        width: int, columns a row must have; a shorter row is an error naming the file, line and column.
        columns: `(field, name, index)` or `(field, name, index, width)` tuples, read in this order (which
            column an error names); `field` is `guid`, `text_a`, `text_b` or `label`; `width` overrides
            `width` for that column. Without a `guid` column the guid is `"<set>-<row index>"`, without a
            label the label is the processor's `TEST_LABEL`, without `text_b` it is None.
        header: bool, the first row is a header (skipped).
        raw_guid: bool, the guid column is taken as is (no `process_text`), as the original.
        last_column_label: None or `(needed, what)`: the label is the row's last column; rows must have
            `needed` columns (`what` describes them in the error).
        skip_short: bool, rows shorter than `width` are skipped (logged) instead of an error when the first
            column without its own width is reached, as the original QQP reader.
    """

    width: int
    columns: tuple
    header: bool = True
    raw_guid: bool = False
    last_column_label: tuple = None
    skip_short: bool = False


class MnliProcessor(DataProcessor):
    """MultiNLI (matched): columns 8 / 9 / -1, guid column 0, header row skipped."""

    DIR = "MNLI"
    DEV_FILE = "dev_matched.tsv"
    TEST_FILE = "test_matched.tsv"
    LABELS = ("contradiction", "entailment", "neutral")
    LEADERBOARD_FILE = "MNLI-m.tsv"
    DEV_SET = "dev_matched"
    TEST_LABEL = "contradiction"
    # The guid is the index column; the GLUE submission relies on it.
    TEST_LAYOUT = RowLayout(10, (("guid", "index", 0), ("text_a", "sentence1", 8), ("text_b", "sentence2", 9)))
    LAYOUT = TEST_LAYOUT._replace(
        last_column_label=(11, "sentence1, sentence2 and a label in the last column"))


class MisMnliProcessor(MnliProcessor):
    """MultiNLI mismatched: the MNLI train set, `dev_mismatched.tsv` / `test_mismatched.tsv`."""

    DEV_FILE = "dev_mismatched.tsv"
    TEST_FILE = "test_mismatched.tsv"
    LEADERBOARD_FILE = "MNLI-mm.tsv"
    DEV_SET = "dev"


class MrpcProcessor(DataProcessor):
    """MRPC: columns 3 / 4 / 0; train/dev guids `"<set>-<i>"`, test guid column 0 and label "0"."""

    DIR = "MRPC"
    LABELS = ("0", "1")
    LEADERBOARD_FILE = "MRPC.tsv"
    LAYOUT = RowLayout(5, (("text_a", "#1 String", 3), ("text_b", "#2 String", 4), ("label", "Quality", 0)))
    TEST_LAYOUT = RowLayout(5, (("text_a", "#1 String", 3), ("text_b", "#2 String", 4), ("guid", "index", 0)),
                            raw_guid=True)


class ColaProcessor(DataProcessor):
    """CoLA: headerless train/dev (label column 1, sentence column 3); test has a header (index, sentence)."""

    DIR = "CoLA"
    LABELS = ("0", "1")
    LEADERBOARD_FILE = "CoLA.tsv"
    # Only the test set has a header.
    LAYOUT = RowLayout(4, (("text_a", "sentence", 3), ("label", "label", 1)), header=False)
    TEST_LAYOUT = RowLayout(2, (("guid", "index", 0), ("text_a", "sentence", 1)), raw_guid=True)


class Sst2Processor(DataProcessor):
    """SST-2: train/dev sentence column 0, label column 1; test index column 0, sentence column 1."""

    DIR = "SST-2"
    LABELS = ("0", "1")
    LEADERBOARD_FILE = "SST-2.tsv"
    LAYOUT = RowLayout(2, (("text_a", "sentence", 0), ("label", "label", 1)))
    TEST_LAYOUT = RowLayout(2, (("guid", "index", 0), ("text_a", "sentence", 1)))


class StsbProcessor(DataProcessor):
    """STS-B regression: columns 7 / 8 / float(-1), guid column 0, test label 0."""

    DIR = "STS-B"
    LABELS = (None,)
    LEADERBOARD_FILE = "STS-B.tsv"
    TEST_LABEL = 0
    TEST_LAYOUT = RowLayout(9, (("guid", "index", 0), ("text_a", "sentence1", 7), ("text_b", "sentence2", 8)))
    LAYOUT = TEST_LAYOUT._replace(
        last_column_label=(10, "sentence1, sentence2 and a score in the last column"))

    def _parse_label(self, value, path, line_number):
        try:
            return float(value)
        except ValueError:
            raise InputError(f"{path}:{line_number}: the score in the last column must be a float. "
                             f"Received: {value!r}.") from None


class QqpProcessor(DataProcessor):
    """QQP: train/dev columns 3 / 4 / 5 (rows missing a column are skipped, as the original); test 1 / 2."""

    DIR = "QQP"
    LABELS = ("0", "1")
    LEADERBOARD_FILE = "QQP.tsv"
    # The original skips the short train/dev rows (QQP has a few with missing questions).
    LAYOUT = RowLayout(6, (("guid", "id", 0, 1), ("text_a", "question1", 3), ("text_b", "question2", 4),
                           ("label", "is_duplicate", 5)), raw_guid=True, skip_short=True)
    TEST_LAYOUT = RowLayout(3, (("guid", "id", 0, 1), ("text_a", "question1", 1), ("text_b", "question2", 2)),
                            raw_guid=True)


class _IndexPairProcessor(DataProcessor):
    """QNLI/RTE/WNLI/AX layout: guid column 0, texts 1 / 2, label in the last column."""

    TEST_LAYOUT = RowLayout(3, (("guid", "index", 0), ("text_a", "text", 1), ("text_b", "text", 2)))
    LAYOUT = TEST_LAYOUT._replace(last_column_label=(4, "index, two texts and a label in the last column"))


class QnliProcessor(_IndexPairProcessor):
    """QNLI: question / sentence, labels entailment, not_entailment."""

    DIR = "QNLI"
    LABELS = ("entailment", "not_entailment")
    LEADERBOARD_FILE = "QNLI.tsv"
    DEV_SET, TEST_SET = "dev_matched", "test_matched"
    TEST_LABEL = "entailment"


class RteProcessor(_IndexPairProcessor):
    """RTE: sentence1 / sentence2, labels entailment, not_entailment."""

    DIR = "RTE"
    LABELS = ("entailment", "not_entailment")
    LEADERBOARD_FILE = "RTE.tsv"
    TEST_LABEL = "entailment"


class WnliProcessor(_IndexPairProcessor):
    """WNLI: sentence1 / sentence2, labels 0, 1."""

    DIR = "WNLI"
    LABELS = ("0", "1")
    LEADERBOARD_FILE = "WNLI.tsv"
    TEST_LABEL = "0"


class AXProcessor(_IndexPairProcessor):
    """The GLUE diagnostic set `diagnostic/diagnostic.tsv` (test only), predicted with an MNLI model.

    Unregistered in the original's `run_classifier.py`; here task name `ax` runs `--do_predict` only.
    """

    DIR = "diagnostic"
    TRAIN_FILE = None
    DEV_FILE = None
    TEST_FILE = "diagnostic.tsv"
    LABELS = ("contradiction", "entailment", "neutral")
    LEADERBOARD_FILE = "AX.tsv"
    TEST_LABEL = "contradiction"


class StdlibProcessor(DataProcessor):
    """Not a GLUE task: the quickstart's labelled task (`albert_tf.quickstart.task`), which part of Python's
    standard library a docstring passage comes from. SST-2's layout (train/dev `sentence<TAB>label` with a header,
    test `index<TAB>sentence`) with four labels, in `data_dir/STDLIB/`."""

    DIR = "STDLIB"
    LABELS = ("async", "email", "testing", "xml")
    LEADERBOARD_FILE = None
    TEST_LABEL = "async"
    LAYOUT = Sst2Processor.LAYOUT
    TEST_LAYOUT = Sst2Processor.TEST_LAYOUT


PROCESSORS = {
    "cola": ColaProcessor,
    "mnli": MnliProcessor,
    "mismnli": MisMnliProcessor,
    "mrpc": MrpcProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "qqp": QqpProcessor,
    "qnli": QnliProcessor,
    "wnli": WnliProcessor,
    "ax": AXProcessor,
    "stdlib": StdlibProcessor,
}


def get_processor(task_name, use_spm=True, do_lower_case=True):
    """The processor of `task_name` (case-insensitive), e.g. `get_processor("MNLI")`."""
    name = (task_name or "").lower()
    if name not in PROCESSORS:
        raise InputError(f"Task not found: `task_name` must be one of {sorted(PROCESSORS)}. "
                         f"Received: {task_name!r}.")
    return PROCESSORS[name](use_spm=use_spm, do_lower_case=do_lower_case)


# --- features ---

def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer, task_name):
    """One `InputExample` -> `InputFeatures`, exactly as the original `convert_single_example`.

    Args:
        ex_index: int, position (the first 5 are logged).
        example: `InputExample` or `PaddingInputExample`.
        label_list: list of labels (`[None]` for STS-B).
        max_seq_length: int.
        tokenizer: object with `tokenize(text)` and `convert_tokens_to_ids(tokens)`.
        task_name: str, lower-case task name.
    """
    if isinstance(example, PaddingInputExample):
        return InputFeatures(input_ids=[0] * max_seq_length, input_mask=[0] * max_seq_length,
                             segment_ids=[0] * max_seq_length, label_id=0, is_real_example=False)
    regression = label_list == [None]

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = None
    if example.text_b:
        tokens_b = tokenizer.tokenize(example.text_b)
    if tokens_b:
        # [CLS], [SEP], [SEP].
        packing.truncate_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        # [CLS], [SEP].
        tokens_a = tokens_a[0:(max_seq_length - 2)]

    tokens = ["[CLS]"] + list(tokens_a) + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += list(tokens_b) + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = list(tokenizer.convert_tokens_to_ids(tokens))
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    input_ids += [0] * padding
    input_mask += [0] * padding
    segment_ids += [0] * padding

    if regression:
        label_id = float(example.label)
    else:
        if example.label not in label_list:
            raise InputError(f"Example {example.guid!r} of task `{task_name}` has unknown label "
                             f"{example.label!r}; expected one of {label_list}.")
        label_id = label_list.index(example.label)

    if ex_index < 5:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(str(t) for t in tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)
    return InputFeatures(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                         label_id=label_id, guid=example.guid, is_real_example=True)


def feature_to_tf_example(feature, task_name):
    """`InputFeatures` -> `tf.train.Example` with the original feature names."""
    fields = {
        "input_ids": features_lib.int64_feature(feature.input_ids),
        "input_mask": features_lib.int64_feature(feature.input_mask),
        "segment_ids": features_lib.int64_feature(feature.segment_ids),
        "label_ids": (features_lib.float_feature([feature.label_id]) if task_name == "sts-b"
                      else features_lib.int64_feature([feature.label_id])),
        "is_real_example": features_lib.int64_feature([int(feature.is_real_example)]),
    }
    return tf.train.Example(features=tf.train.Features(feature=fields))


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer, output_file,
                                            task_name):
    """Writes the examples' features to the TFRecord `output_file`, atomically.

    The records go to a temporary file renamed into place at the end, so an error (unknown label, bad
    text) or an interruption leaves no partial cache behind.

    Returns:
        int, the number of records written.
    """
    start = time.time()
    with fileio.atomic_path(output_file) as tmp_file, tf.io.TFRecordWriter(tmp_file) as writer:
        for ex_index, example in enumerate(examples):
            if ex_index % 10000 == 0 and ex_index:
                rate = ex_index / max(time.time() - start, 1e-9)
                logging.info("Writing example %d of %d (%.0f examples/s, ETA %.0f s)", ex_index,
                             len(examples), rate, (len(examples) - ex_index) / rate)
            feature = convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer,
                                             task_name)
            writer.write(feature_to_tf_example(feature, task_name).SerializeToString())
    logging.info("Wrote %d examples to %s in %.1f s.", len(examples), output_file, time.time() - start)
    return len(examples)


def cached_record_length(path):
    """`len(input_ids)` of the first record of a TFRecord file, or None if it is empty."""
    for record in tf.data.TFRecordDataset(path).take(1):
        example = tf.train.Example.FromString(record.numpy())
        return len(example.features.feature["input_ids"].int64_list.value)
    return None


def ensure_cached_features(examples, label_list, max_seq_length, tokenizer, output_file, task_name,
                           check_count=False):
    """Writes `output_file` unless it exists (the original reuses caches).

    A reused cache must have `max_seq_length` features and, with `check_count` (eval/predict, whose outputs are
    matched to the examples in order), one record per example; otherwise a ValueError says to delete it.
    """
    if tf.io.gfile.exists(output_file):
        length = cached_record_length(output_file)
        if length is not None and length != max_seq_length:
            raise InputError(f"Cached features {output_file!r} have sequence length {length}, but "
                             f"`max_seq_length` is {max_seq_length}: delete the file or use another "
                             "`cached_dir`.")
        if check_count:
            count = sum(1 for _ in tf.data.TFRecordDataset(output_file))
            if count != len(examples):
                raise InputError(f"Cached features {output_file!r} hold {count} records for {len(examples)} "
                                 "examples (stale cache): delete the file or use another `cached_dir`.")
        logging.info("Using cached features %s.", output_file)
        return
    file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer, output_file,
                                            task_name)


def cache_file(cached_dir, task_name, split):
    """`<cached_dir>/<task>_<split>.tf_record`, split in `train`, `eval`, `predict`."""
    return os.path.join(cached_dir, f"{task_name}_{split}.tf_record")


def pad_examples(examples, batch_size):
    """Appends `PaddingInputExample`s up to a multiple of `batch_size` (what the original does on TPU)."""
    examples = list(examples)
    while len(examples) % batch_size:
        examples.append(PaddingInputExample())
    return examples


def file_based_dataset(input_file, seq_length, is_training, drop_remainder, task_name, batch_size,
                       input_context=None, seed=None, start_batch=0):
    """The original `file_based_input_fn_builder` as a `tf.data.Dataset` of int32/float32 feature dicts.

    Training: `repeat()`, `shuffle(100)`, batch with `drop_remainder`; with a `seed`, the seeded positional
    stream (`albert_tf.data.record_stream`, shuffle blocks of 100) from batch `start_batch` (a resumed run's
    position). Eval/predict: in file order. With a `tf.distribute.InputContext` of several input pipelines,
    each reads its shard of the records.
    """
    spec = features_lib.parse_spec(CLASSIFIER, seq=seq_length)
    if task_name == "sts-b":
        spec["label_ids"] = tf.io.FixedLenFeature([], tf.float32)
    d = positional.task_records(input_file, is_training, batch_size, input_context, 100, seed, start_batch)
    d = d.map(lambda record: features_lib.cast_int64_to_int32(tf.io.parse_single_example(record, spec)),
              num_parallel_calls=tf.data.AUTOTUNE)
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    return d.prefetch(tf.data.AUTOTUNE)


def read_features(input_file, seq_length, task_name):
    """All records of a cached TFRecord as NumPy arrays (for tests and inspection)."""
    batches = list(file_based_dataset(input_file, seq_length, False, False, task_name, 1024))
    if not batches:
        return {}
    return {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
