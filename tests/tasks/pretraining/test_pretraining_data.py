"""Tests of the pretraining data writer (`albert_tf.data.pretraining_*`, `albert-create-pretraining-data`).

The reference is `tests/original_create_pretraining_data.py`, a plain transcription of the original
`create_pretraining_data.py` (token strings, lists, the protobuf API): on a corpus that fits in one shard the
writer must produce the same examples. Statistics are checked on a generated corpus. The fast shuffle and the
hand-written record encoder are checked against `random.shuffle` and `tf.train.Example.SerializeToString`.
"""

import collections
import importlib.util
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks.pretraining import data as pretraining_data
from albert_tf.tasks.pretraining.writer import records as pretraining_records
from albert_tf.tasks.pretraining.writer import shuffle as pretraining_shuffle
from albert_tf.tasks.pretraining.writer import local as pretraining
from albert_tf.tasks.pretraining.writer.instances import PretrainingDataOptions
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.errors import InputError
from pretraining_fixtures import WORDS, _as_arrays, _examples, _sentence, _write_corpus, check_statistics
from repo_paths import REPO



def _load_transcription():
    spec = importlib.util.spec_from_file_location(
        "original_create_pretraining_data", os.path.join(REPO, "tests", "original_create_pretraining_data.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


original = _load_transcription()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretraining")
    rng = random.Random(7)
    text = str(root / "corpus.txt")
    _write_corpus(text, rng, 60)
    # A second file, with accents, odd whitespace and a document that continues from the first file.
    second = str(root / "corpus2.txt")
    with open(second, "w", encoding="utf-8") as f:
        f.write("Café  naïve\u00a0Ångström über alles.\n\n")
        f.write("   \n")
        for _ in range(5):
            f.write(_sentence(rng) + "\n")
    spm_model = train_sentencepiece([text, second], str(root / "spm"), vocab_size=300, minloglevel=2,
                                    hard_vocab_limit=False)
    # A WordPiece vocabulary: the words, their pieces, punctuation and digits.
    vocab_file = str(root / "vocab.txt")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,!?") + [str(d) for d in range(10)]
    tokens += [f"##{d}" for d in range(10)]
    for w in sorted(set(WORDS)):
        if len(w) > 8:
            tokens += [w[:4], "##" + w[4:8], "##" + w[8:]]
        else:
            tokens.append(w)
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(dict.fromkeys(tokens)) + "\n")
    return dict(root=root, text=text, second=second, spm_model=spm_model, vocab_file=vocab_file)


@pytest.mark.parametrize(
    "flags",
    [
        dict(),
        dict(do_permutation=True, favor_shorter_ngram=False, random_next_sentence=True),
        dict(do_whole_word_mask=False, ngram=2, short_seq_prob=0.5, do_lower_case=False),
    ],
    ids=["defaults", "permutation_nsp", "no_wwm"],
)
def test_same_examples_as_the_transcription_of_the_original(corpus, tmp_path, flags):
    inputs = [corpus["text"], corpus["second"]]
    common = dict(max_seq_length=48, max_predictions_per_seq=7, dupe_factor=2, random_seed=3, **flags)
    ours = [str(tmp_path / f"ours-{i}.tfrecord") for i in range(2)]
    theirs = [str(tmp_path / f"orig-{i}.tfrecord") for i in range(2)]
    stats = pretraining.write_pretraining_examples(
        ",".join(inputs), ",".join(ours), spm_model_file=corpus["spm_model"],
        options=PretrainingDataOptions(**common))
    count = original.run(inputs, theirs, spm_model_file=corpus["spm_model"], **common)
    assert stats.instances == count > 100
    for a, b in zip(ours, theirs):
        assert _examples(a) == _examples(b)


def test_same_examples_as_the_transcription_with_wordpiece(corpus, tmp_path):
    common = dict(max_seq_length=40, max_predictions_per_seq=6, dupe_factor=2, random_seed=11)
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "orig.tfrecord")
    stats = pretraining.write_pretraining_examples(
        corpus["text"], ours, vocab_file=corpus["vocab_file"], options=PretrainingDataOptions(**common))
    count = original.run([corpus["text"]], [theirs], vocab_file=corpus["vocab_file"], **common)
    assert stats.instances == count > 50
    examples = _examples(ours)
    assert examples == _examples(theirs)
    # The ## pieces are not word starts, so some token_boundary entries inside words are 0.
    boundary = np.concatenate([e.features.feature["token_boundary"].int64_list.value for e in examples])
    mask = np.concatenate([e.features.feature["input_mask"].int64_list.value for e in examples])
    assert 0 < np.sum((boundary == 0) & (mask == 1))


def _reference_example(seq, num_predictions, ids, len_a, boundary, positions, labels, label):
    """The features of one instance as the original's `write_instance_to_example_files` builds them: an
    OrderedDict of `tf.train.Feature`s, padded with zeros."""
    def ints(values, length):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values) + [0] * (length - len(values))))

    n = len(positions)
    features = collections.OrderedDict()
    features["input_ids"] = ints(ids, seq)
    features["input_mask"] = ints([1] * len(ids), seq)
    features["segment_ids"] = ints([0] * (len_a + 2) + [1] * (len(ids) - len_a - 2), seq)
    features["token_boundary"] = ints(list(boundary), seq)
    features["masked_lm_positions"] = ints(positions, num_predictions)
    features["masked_lm_ids"] = ints(labels, num_predictions)
    features["masked_lm_weights"] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[1.0] * n + [0.0] * (num_predictions - n)))
    features["next_sentence_labels"] = ints([label], 1)
    return features


def _serialized_in_order(features):
    """The wire bytes of `Example{features}` with the map entries in `features`' order (protobuf leaves the
    order of a map's entries to the implementation): each entry serialized by the protobuf API as a
    one-entry `Features`, concatenated, wrapped in `Example` field 1."""
    body = b"".join(tf.train.Features(feature={key: value}).SerializeToString() for key, value in features.items())
    length, varint = len(body), b""
    while length >= 0x80:
        varint += bytes([(length & 0x7F) | 0x80])
        length >>= 7
    return b"\x0a" + varint + bytes([length]) + body


def test_example_encoder_bytes_equal_the_protobuf_message():
    """The production encoder's bytes against messages built with the protobuf API: one- to three-byte
    varints (127, 128, 16383, 16384), the extended id `vocab_size` written as <unk>, full and empty
    predictions, a full-length and a short sequence."""
    vocab_size, unk_id, seq, num_predictions = 20000, 1, 24, 5
    encoder = pretraining_records.ExampleEncoder(seq, num_predictions, vocab_size, unk_id)
    rng = np.random.default_rng(0)
    cases = []
    for length, n, label in ((seq, num_predictions, 1), (11, 2, 0), (7, 0, 1)):
        ids = [2] + [int(i) for i in rng.integers(0, vocab_size + 1, length - 2)] + [3]
        ids[1:5] = [127, 128, 16383, 16384] if length > 6 else ids[1:5]
        ids[5] = vocab_size
        boundary = bytes(int(b) for b in rng.integers(0, 2, length))
        positions = sorted(int(p) for p in rng.choice(np.arange(1, length - 1), n, replace=False))
        labels = [ids[p] for p in positions[:-1]] + [vocab_size] if n else []
        cases.append((ids, 3, boundary, positions, labels, label))
    for ids, len_a, boundary, positions, labels, label in cases:
        ours = encoder.encode(ids, len_a, boundary, positions, labels, label)
        unk = [unk_id if i == vocab_size else i for i in ids]
        features = _reference_example(seq, num_predictions, unk, len_a, boundary, positions,
                                      [unk_id if i == vocab_size else i for i in labels], label)
        assert ours == _serialized_in_order(features)
        assert tf.train.Example.FromString(ours) == tf.train.Example(features=tf.train.Features(feature=features))


def test_schema_reads_back_with_parse_single_example(corpus, tmp_path):
    for permutation in (False, True):
        out = str(tmp_path / f"out-{permutation}.tfrecord")
        pretraining.write_pretraining_examples(
            corpus["text"], out, spm_model_file=corpus["spm_model"],
            options=PretrainingDataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                                                   do_permutation=permutation))
        pred = 5 * (2 if permutation else 1)
        arrays = _as_arrays(out, 32, pred)
        assert set(arrays) == {f.name for f in pretraining_data.PRETRAINING}
        assert arrays["input_ids"].shape[1:] == (32,) and arrays["input_ids"].dtype == np.int64
        assert arrays["masked_lm_positions"].shape[1:] == (pred,)
        assert arrays["masked_lm_weights"].dtype == np.float32
        assert arrays["next_sentence_labels"].shape[1:] == (1,)
        lengths = arrays["input_mask"].sum(1)
        ids = arrays["input_ids"]
        assert np.all(ids[:, 0] == 2)
        assert np.all(ids[np.arange(len(ids)), lengths - 1] == 3)
        assert np.all((ids == 0) == (arrays["input_mask"] == 0))
        weights = arrays["masked_lm_weights"]
        assert np.all((weights == 1) == (arrays["masked_lm_positions"] > 0))
        if permutation:
            assert weights.sum(1).max() > 5


def test_statistics_on_a_generated_corpus(tmp_path):
    def write(path, out, spm_model, options):
        stats = pretraining.write_pretraining_examples(path, out, spm_model_file=spm_model, options=options)
        return stats, [out]

    check_statistics(tmp_path, write)


def test_output_does_not_depend_on_the_number_of_workers(corpus, tmp_path):
    options = PretrainingDataOptions(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2)
    outputs = {}
    for workers in (1, 2):
        paths = [str(tmp_path / f"w{workers}-{i}.tfrecord") for i in range(3)]
        stats = pretraining.write_pretraining_examples(
            [corpus["text"], corpus["second"]], paths, spm_model_file=corpus["spm_model"], options=options,
            num_workers=workers, shard_size_mb=0.002)  # ~2 kB shards: many shards
        outputs[workers] = [open(p, "rb").read() for p in paths]
        assert stats.instances > 100
    assert outputs[1] == outputs[2]
    assert all(outputs[1])
    assert not [f for f in os.listdir(tmp_path) if "tmp" in f]


def test_same_seed_same_bytes_other_seed_other_bytes(corpus, tmp_path):
    def run(seed, name):
        path = str(tmp_path / name)
        pretraining.write_pretraining_examples(
            corpus["text"], path, spm_model_file=corpus["spm_model"],
            options=PretrainingDataOptions(max_seq_length=32, dupe_factor=1, random_seed=seed))
        return open(path, "rb").read()

    assert run(5, "a") == run(5, "b")
    assert run(5, "a") != run(6, "c")


def test_bad_inputs(corpus, tmp_path):
    options = PretrainingDataOptions(max_seq_length=32, dupe_factor=1)
    missing = str(tmp_path / "nope*.txt")
    with pytest.raises(ValueError, match="nope"):
        pretraining.write_pretraining_examples(f"{corpus['text']},{missing}", str(tmp_path / "x.tfrecord"),
                                               spm_model_file=corpus["spm_model"], options=options)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n   \n\n")
    out_dir = tmp_path / "out"
    with pytest.raises(ValueError, match="empty"):
        pretraining.write_pretraining_examples(str(empty), str(out_dir / "e.tfrecord"),
                                               spm_model_file=corpus["spm_model"], options=options)
    assert not os.listdir(out_dir)  # nothing half-written
    with pytest.raises(ValueError, match="max_seq_length"):
        PretrainingDataOptions(max_seq_length=4).validate()

    # Bytes that are not UTF-8 are refused with the file and line (the original drops them silently).
    broken = tmp_path / "broken.txt"
    good = open(corpus["text"], "rb").read()
    broken.write_bytes(good + b"bad \xff\xfe bytes here.\nmore \xc3 text.\n")
    line = good.count(b"\n") + 1
    with pytest.raises(InputError, match=rf"broken.txt:{line}: expected UTF-8 text, got the bytes b'\\xff"):
        pretraining.write_pretraining_examples(str(broken), str(out_dir / "b.tfrecord"),
                                               spm_model_file=corpus["spm_model"], options=options)
    assert not os.listdir(out_dir)


@pytest.mark.e2e
def test_command_line(corpus, tmp_path):
    out = str(tmp_path / "cli.tfrecord")
    args = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={corpus['text']}",
            f"--output_file={out}", f"--spm_model_file={corpus['spm_model']}", "--max_seq_length=32",
            "--dupe_factor=1", "--max_predictions_per_seq=5"]
    result = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Summary:" in result.stderr and "masked fraction" in result.stderr
    library = str(tmp_path / "lib.tfrecord")
    pretraining.write_pretraining_examples(
        corpus["text"], library, spm_model_file=corpus["spm_model"],
        options=PretrainingDataOptions(max_seq_length=32, dupe_factor=1, max_predictions_per_seq=5))
    assert open(out, "rb").read() == open(library, "rb").read()


def test_fast_shuffle_draws_like_random_shuffle():
    assert pretraining_shuffle._FAST_SHUFFLE  # the exact fast path is active on this interpreter
    for n in (0, 1, 2, 7, 64, 100, 511, 4096):
        for seed in range(5):
            reference, fast, skip = random.Random(seed), random.Random(seed), random.Random(seed)
            expected = list(range(n))
            reference.shuffle(expected)
            assert pretraining_shuffle.shuffled_range(fast, n) == expected
            pretraining_shuffle.advance_shuffle(skip, n)
            assert reference.getstate() == fast.getstate() == skip.getstate()


# ---------------------------------------------------------------------------------------------------
# Numbers followed by a comma: the original's `encode_pieces` as it runs under Python 3.

NUMBER_WORDS = ("the city was founded in it is a total area of square kilometres population river north south "
                "by and with during year century people km").split()
DIGIT_COMMA_EXAMPLES = ["founded in 1801, it is", "a total area of 21,218 square kilometres (1,680 km"]


def _number(rng):
    r = rng.random()
    if r < 0.5:
        return str(rng.randint(1000, 2099))
    if r < 0.8:
        return f"{rng.randint(1, 99)},{rng.randint(0, 999):03d}"
    return str(rng.randint(1, 999))


def _number_line(rng):
    words = [rng.choice(NUMBER_WORDS) for _ in range(rng.randint(4, 12))]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randint(0, len(words)), _number(rng) + ",")
    if rng.random() < 0.3:
        words.insert(rng.randint(0, len(words)), "(" + _number(rng) + ",")
    return " ".join(words)


def _reference_pieces(sp, text, strip):
    """The rule: a piece ending in "<digit>," becomes the pieces of its digits (its `▁` removed) and ",".

    Under Python 3 the original never strips the `▁` SentencePiece puts in front of the re-encoded digits
    (`strip=False`); the Python 2 reading strips it when the split piece did not start with `▁`.
    """
    out = []
    for piece in sp.EncodeAsPieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            digits = sp.EncodeAsPieces(piece[:-1].replace("▁", ""))
            if strip and not piece.startswith("▁") and digits[0].startswith("▁"):
                digits = digits[1:] if digits[0] == "▁" else [digits[0][1:]] + digits[1:]
            out += digits + [","]
        else:
            out.append(piece)
    return out


def test_digit_comma_pieces_follow_the_original_under_python3(tmp_path):
    import sentencepiece as spm

    rng = random.Random(0)
    train = tmp_path / "numbers.txt"
    train.write_text("\n".join(_number_line(rng) for _ in range(3000)) + "\n")
    model = train_sentencepiece([str(train)], str(tmp_path / "numbers"), vocab_size=300, minloglevel=2,
                                hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=model)
    pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
    assert sum(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces) > 20  # digit-comma pieces

    lines = [_number_line(rng) for _ in range(300)] + DIGIT_COMMA_EXAMPLES
    assert all(line == " ".join(line.split()).lower() for line in lines)  # preprocess_text leaves them as is
    reference = {line: [sp.PieceToId(p) for p in _reference_pieces(sp, line, strip=False)] for line in lines}
    stripped = {line: [sp.PieceToId(p) for p in _reference_pieces(sp, line, strip=True)] for line in lines}
    # The two readings differ on many lines and on both examples, so the test sees the rule.
    assert sum(reference[line] != stripped[line] for line in lines) > 100
    assert all(reference[line] != stripped[line] for line in DIGIT_COMMA_EXAMPLES)
    assert _reference_pieces(sp, DIGIT_COMMA_EXAMPLES[0], strip=False)[2:7] == ["▁18", "▁", "0", "1", ","]
    # The transcription of the original gives the same pieces.
    assert all(original.encode_pieces(sp, line) == _reference_pieces(sp, line, strip=False) for line in lines)

    # Documents of two lines; no masking, no short targets and room for both: every record is
    # [CLS] A [SEP] B [SEP] with A, B the ids of the two lines (in either order).
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"{a}\n{b}\n\n" for a, b in zip(lines[0::2], lines[1::2])))
    out = str(tmp_path / "digits.tfrecord")
    pretraining.write_pretraining_examples(
        str(corpus), out, spm_model_file=model,
        options=PretrainingDataOptions(max_seq_length=128, dupe_factor=1, masked_lm_prob=0.0, short_seq_prob=0.0))
    written = collections.Counter()
    for example in _examples(out):
        ids = list(example.features.feature["input_ids"].int64_list.value)
        ids = ids[:sum(example.features.feature["input_mask"].int64_list.value)]
        assert ids[0] == 2 and ids[-1] == 3 and ids.count(3) == 2
        sep = ids.index(3)
        written.update([tuple(ids[1:sep]), tuple(ids[sep + 1:-1])])
    assert written == collections.Counter(tuple(reference[line]) for line in lines)
