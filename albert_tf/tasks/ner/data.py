"""CoNLL-2003 token classification data: reading, labels, SentencePiece features in windows, TFRecords.

The layout is the CoNLL-2003 shared task's: `train.txt`, `valid.txt` (or `dev.txt`) and `test.txt` in one
directory, one token per line as `word POS chunk tag` (the tag is the last column, so `word tag` lines read
too; every token line has the first one's column count), a blank line between sentences, `-DOCSTART-` lines
skipped. The tags may be IOB1 (`I-` opens an entity,
`B-` only between two adjacent entities of one type) or IOB2/BIO (`B-` opens every entity); the label list is
read from the training file (`O` first, then the others sorted) or given.

Each word becomes its SentencePiece pieces with the original's preprocessing (`preprocess_text` then
`FullTokenizer.tokenize`, as the original's data readers do); the word's label goes on its first piece, and
every other position (later pieces, `[CLS]`, `[SEP]`, padding) has the label id `IGNORE_ID`, left out of the
loss and of the predictions (a word that normalises to nothing has no piece and is tagged `O`). A sentence
whose pieces do not fit `max_seq_length - 2` is split into consecutive windows of whole words that cover every
word once (a single word longer than a window keeps its first pieces). The TFRecords hold the GLUE token
features plus a per-position `label_ids`, int64 as the original's writers.
"""

import collections
import os

import numpy as np
import tensorflow as tf

from albert_tf import fileio
from albert_tf.text import tokenization
from albert_tf.data import features as features_lib
from albert_tf.data.features import Feature
from albert_tf.errors import InputError
from albert_tf.fileio import atomic_path

IGNORE_ID = -100
DOCSTART = "-DOCSTART-"
NO_PIECE_TAG = "O"   # The tag of a word that normalises to nothing (combining marks only): it has no piece.
SPLIT_FILES = {"train": ("train.txt",), "dev": ("valid.txt", "dev.txt"), "test": ("test.txt",)}

# The TFRecord schema: the GLUE token features, a label id per position, and whether the window is real.
TOKEN_CLASSIFICATION = (
    *features_lib.tokens(),
    Feature("label_ids", tf.int64, "seq"),
    Feature("is_real_example", tf.int64, "scalar"),
)

# One sentence: its words, tags and the source lines (for `predictions.txt`).
Sentence = collections.namedtuple("Sentence", ["words", "tags", "lines"])
# One window of a sentence: the sentence index, the first word, the number of words, and the features.
Window = collections.namedtuple("Window", ["sentence", "first_word", "num_words", "input_ids", "label_ids",
                                           "first_pieces"])


def split_path(data_dir, split):
    """The file of `split` (`train`, `dev`, `test`) in `data_dir`; `InputError` naming the names tried."""
    names = SPLIT_FILES[split]
    for name in names:
        path = os.path.join(data_dir, name)
        if tf.io.gfile.exists(path):
            return path
    raise InputError(f"No {' or '.join(names)} in `data_dir` {data_dir!r} (the CoNLL-2003 layout).")


def read_sentences(path):
    """The sentences of a CoNLL file: one `word ... tag` line per token, blank lines between sentences.

    Every token line has the column count of the file's first token line (4 in CoNLL-2003, `word POS chunk
    tag`; 2 for `word tag` files), so a line that lost its tag (`call NN I-NP` in a 4-column file) is refused
    where the original reader takes its chunk column as the tag.

    Raises:
        InputError: `path:line` of a line with one column, a line whose column count differs from the first
            token line's, bytes that are not UTF-8, or a file without a token line.
    """
    sentences, words, tags, lines = [], [], [], []
    width = None
    for number, line in enumerate(fileio.read_text(path, lines=True).split("\n"), start=1):
        line = line.rstrip("\r")
        columns = line.split()
        if not columns or columns[0] == DOCSTART:
            if words:
                sentences.append(Sentence(words, tags, lines))
                words, tags, lines = [], [], []
            continue
        if width is None:
            if len(columns) < 2:
                raise InputError(f"{path}:{number}: expected `word POS chunk tag` (at least a word and a tag), "
                                 f"got {len(columns)} column: {line!r}")
            width = len(columns)
        elif len(columns) != width:
            raise InputError(f"{path}:{number}: expected {width} columns (as the first token line), got "
                             f"{len(columns)}: {line!r}")
        words.append(columns[0])
        tags.append(columns[-1])
        lines.append(line)
    if words:
        sentences.append(Sentence(words, tags, lines))
    if not sentences:
        raise InputError(f"{path}:1: expected CoNLL token lines (`word POS chunk tag`), got none.")
    return sentences


def labels_from_sentences(sentences):
    """The label list of a training set: `O` first (when present), then the other tags sorted."""
    tags = {tag for sentence in sentences for tag in sentence.tags}
    return (["O"] if "O" in tags else []) + sorted(tags - {"O"})


def parse_labels(labels):
    """A label list from a comma-separated string or a sequence; `InputError` on empty or repeated labels."""
    if isinstance(labels, str):
        labels = [label.strip() for label in labels.split(",") if label.strip()]
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels):
        raise InputError(f"`labels` must be distinct tags, e.g. `O,B-PER,I-PER`. Received: {labels!r}.")
    return labels


def check_tags(sentences, labels, path):
    """Raises `InputError` naming `path` and the tags that are not in `labels`."""
    unknown = sorted({tag for sentence in sentences for tag in sentence.tags} - set(labels))
    if unknown:
        raise InputError(f"{path}: tags {', '.join(unknown)} are not in the label list {', '.join(labels)} "
                         "(read from train.txt or given with `labels`).")


def word_pieces(tokenizer, word, do_lower_case):
    """The pieces of one word: `tokenizer.tokenize(preprocess_text(word, lower=do_lower_case))`."""
    return tokenizer.tokenize(tokenization.preprocess_text(word, lower=do_lower_case))


def sentence_windows(sentence_index, sentence, tokenizer, label_map, max_seq_length, do_lower_case):
    """The windows of one sentence, each `[CLS] pieces of whole words [SEP]` within `max_seq_length`."""
    budget = max_seq_length - 2
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    word_ids = []
    for word in sentence.words:
        word_ids.append(tokenizer.convert_tokens_to_ids(word_pieces(tokenizer, word, do_lower_case))[:budget])
    windows, first = [], 0
    while first < len(word_ids):
        end, used = first, 0
        while end < len(word_ids) and used + len(word_ids[end]) <= budget:
            used += len(word_ids[end])
            end += 1
        input_ids, label_ids, first_pieces = [cls_id], [IGNORE_ID], []
        for index in range(first, end):
            first_pieces.append(len(input_ids) if word_ids[index] else None)
            tag = sentence.tags[index] if sentence.tags is not None else None
            label_ids += ([label_map.get(tag, IGNORE_ID)] + [IGNORE_ID] * (len(word_ids[index]) - 1)
                          if word_ids[index] else [])
            input_ids += word_ids[index]
        input_ids.append(sep_id)
        label_ids.append(IGNORE_ID)
        windows.append(Window(sentence_index, first, end - first, input_ids, label_ids, first_pieces))
        first = end
    return windows


def convert_sentences(sentences, tokenizer, labels, max_seq_length, do_lower_case=True):
    """Every window of `sentences`, in order."""
    if max_seq_length < 3:
        raise InputError(f"`max_seq_length` must be >= 3. Received: `max_seq_length={max_seq_length}`.")
    label_map = {label: i for i, label in enumerate(labels)}
    return [window for i, sentence in enumerate(sentences)
            for window in sentence_windows(i, sentence, tokenizer, label_map, max_seq_length, do_lower_case)]


def window_arrays(windows, max_seq_length):
    """`{input_ids, input_mask, segment_ids, label_ids, is_real_example}` int32 NumPy arrays of `windows`."""
    n = len(windows)
    ids = np.zeros([n, max_seq_length], np.int32)
    labels = np.full([n, max_seq_length], IGNORE_ID, np.int32)
    mask = np.zeros([n, max_seq_length], np.int32)
    for i, window in enumerate(windows):
        ids[i, :len(window.input_ids)] = window.input_ids
        labels[i, :len(window.label_ids)] = window.label_ids
        mask[i, :len(window.input_ids)] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids), "label_ids": labels,
            "is_real_example": np.ones([n], np.int32)}


def write_tfrecord(windows, max_seq_length, path):
    """Writes the windows as `tf.Example`s of the `TOKEN_CLASSIFICATION` schema to `path` atomically."""
    arrays = window_arrays(windows, max_seq_length)
    with atomic_path(path) as tmp, tf.io.TFRecordWriter(tmp) as writer:
        for i in range(len(windows)):
            feature = {name: features_lib.int64_feature(np.reshape(arrays[name][i], [-1]))
                       for name in ("input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example")}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


def dataset(path, max_seq_length, batch_size, is_training, input_context=None, seed=None, drop_remainder=False):
    """The batched int32 features of a TFRecord of windows (repeated and shuffled for training)."""
    spec = features_lib.parse_spec(TOKEN_CLASSIFICATION, seq=max_seq_length)
    records = tf.data.TFRecordDataset(path)
    if input_context is not None and input_context.num_input_pipelines > 1:
        records = records.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        records = records.repeat().shuffle(1000, seed=seed)
    parsed = records.map(lambda r: features_lib.cast_int64_to_int32(tf.io.parse_single_example(r, spec)))
    return parsed.batch(batch_size, drop_remainder=drop_remainder)


def word_predictions(sentences, windows, window_predictions, labels):
    """The predicted tag of every word: `window_predictions [num_windows, seq]` label ids, read at each word's
    first piece and put back into the sentences the windows came from (lists of tags, one per sentence)."""
    tags = [[None] * len(sentence.words) for sentence in sentences]
    for window, row in zip(windows, window_predictions):
        for offset, position in enumerate(window.first_pieces):
            tag = labels[int(row[position])] if position is not None else NO_PIECE_TAG
            tags[window.sentence][window.first_word + offset] = tag
    missing = [i for i, sentence_tags in enumerate(tags) if None in sentence_tags]
    if missing:
        raise InputError(f"Sentences {missing[:5]} have words no window predicts ({len(windows)} windows).")
    return tags


def format_predictions(sentences, predicted):
    """The CoNLL layout with the predicted tag as a last column: each source line + ` tag`, a blank line
    after each sentence."""
    out = []
    for sentence, tags in zip(sentences, predicted):
        out.extend(f"{line} {tag}\n" for line, tag in zip(sentence.lines, tags))
        out.append("\n")
    return "".join(out)
