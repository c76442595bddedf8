"""Pretraining data writer: raw text -> SOP pairs with n-gram masks -> TFRecords (original-release §5).

The algorithm is the original `create_pretraining_data.py`, step by step and with the same order of
calls on one `random.Random(seed)`:

* §5.1 reading: one sentence per line, a line that is empty after normalisation starts a new document
  (documents continue across input files, as in the original), SentencePiece lines go through
  `preprocess_text(line, lower=do_lower_case)`, WordPiece lines through `line.strip()`; empty documents
  are dropped and the documents shuffled; `dupe_factor` passes make the instances, which are shuffled.
* §5.2 instances: short targets with `short_seq_prob`, chunks of sentences, the A/B split, SOP swap (or
  NSP negatives from a random document with `random_next_sentence`), `truncate_seq_pair` from the front or
  the back with p=0.5.
* §5.3 masking: whole-word candidates (`_is_start_piece_sp` / `##`), `num_to_predict`, shuffled n-gram
  starts, the n-gram size p(n) ∝ 1/n (reversed without `favor_shorter_ngram`), the back-off to shorter
  n-grams, the no-op "covered" loop left out, 80/10/10 per token, the second shuffle, `do_permutation`.
* §5.4 schema: `albert_tf.data.features.PRETRAINING`.

Where this writer differs from the original, on purpose:

1. Reproducible: the original draws the n-gram size from NumPy's unseeded global RNG. Here it comes
   from `numpy.random.default_rng(seed)` (the draws of `Generator.choice(ngrams, p=p)`, taken in
   blocks), so the same `--random_seed` gives the same bytes.
2. Bounded memory: the original holds the whole corpus and every instance in RAM. Here documents are
   cut into shards of about `shard_size_mb` of raw text (cut only at blank lines, so never inside a
   document) and each shard is processed like the original processes its whole corpus: the document
   shuffle, the random-document draws for B segments and the instance shuffle happen **within a
   shard**. Instances go to a temporary file, then are copied out in the shuffled order; memory holds
   one shard of documents per worker. Shard k uses the seed `random_seed` for k = 0 and a SHA-256
   derived seed otherwise, so a corpus that fits in one shard gives the instances of the original
   algorithm (with fix 1).
3. Parallel: shards run in `num_workers` processes and are written in shard order, round-robin over the
   output files as the original, so the bytes do not depend on the number of workers.
4. Robust: missing inputs are errors naming the pattern; undecodable bytes are replaced (U+FFFD) and
   counted instead of crashing; an empty corpus is an error; outputs are written to temporary names and
   renamed when complete.
5. The digit-comma rule follows §6 (see `albert_tf.tokenization`).

Usage:
    albert-create-pretraining-data --input_file=corpus/*.txt --output_file=out-0.tfrecord,out-1.tfrecord \\
      --spm_model_file=30k-clean.model --max_seq_length=512 --dupe_factor=40 --num_workers=8
"""

import bisect
import concurrent.futures
import dataclasses
import hashlib
import multiprocessing
import os
import random
import tempfile
import time
import uuid

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import tokenization

# `_is_start_piece_sp` of the original. Its string lists `"` twice and has no `'`; the `€`/`£` it adds
# are `bytes` objects, which never equal a `str` piece under Python 3, so they are left out here.
_SPECIAL_PIECES = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH_OR_SPECIAL = frozenset("abcdefghijklmnopqrstuvwxyz") | _SPECIAL_PIECES


def is_start_piece_sp(piece):
    """True iff a SentencePiece piece starts a word, as the original's `_is_start_piece_sp`."""
    return (
        piece.startswith("▁")
        or piece.startswith("<")
        or piece in _SPECIAL_PIECES
        or not all(c.lower() in _ENGLISH_OR_SPECIAL for c in piece)
    )


def is_start_piece_bert(piece):
    """True iff a WordPiece token starts a word (it is not `##`-prefixed)."""
    return not piece.startswith("##")


# ---------------------------------------------------------------------------------------------------
# `random.Random.shuffle`, faster and with the same draws.
#
# CPython's shuffle swaps x[i] with x[randbelow(i + 1)] for i = n-1 .. 1, where randbelow(m) takes
# `getrandbits(m.bit_length())` (the top bits of one 32-bit Mersenne Twister word) until it is < m.
# `getrandbits(32 * k)` hands out the next k words in the same order, so the loop below consumes exactly
# the words `shuffle` would, in Python without a function call per step (it fetches only as many words
# as steps remain, so it never reads ahead). An import-time check falls back to `rng.shuffle` on any
# interpreter where the two disagree.

_SHIFT = [32 - (i + 1).bit_length() for i in range(1 << 16)]  # randbelow(i + 1) keeps word >> _SHIFT[i]


def _words(rng, count):
    return memoryview(rng.getrandbits(32 * count).to_bytes(4 * count, "little")).cast("I")


def _shuffled_range_fast(rng, n):
    x = list(range(n))
    i = n - 1
    shift = _SHIFT
    while i > 0:
        for w in _words(rng, i):
            r = w >> shift[i]
            if r <= i:
                x[i], x[r] = x[r], x[i]
                i -= 1
    return x


def _advance_shuffle_fast(rng, n):
    i = n - 1
    shift = _SHIFT
    while i > 0:
        for w in _words(rng, i):
            if w >> shift[i] <= i:
                i -= 1


def _fast_shuffle_is_exact():
    import sys

    if sys.byteorder != "little":
        return False
    for n in (0, 1, 2, 3, 5, 17, 64, 257, 1000):
        a, b, c = random.Random(n), random.Random(n), random.Random(n)
        expected = list(range(n))
        a.shuffle(expected)
        if _shuffled_range_fast(b, n) != expected:
            return False
        _advance_shuffle_fast(c, n)
        if not a.random() == b.random() == c.random():
            return False
    return True


_FAST_SHUFFLE = _fast_shuffle_is_exact()


def shuffled_range(rng, n):
    """`x = list(range(n)); rng.shuffle(x); return x`, with the same random draws."""
    if _FAST_SHUFFLE and n <= len(_SHIFT):
        return _shuffled_range_fast(rng, n)
    x = list(range(n))
    rng.shuffle(x)
    return x


def advance_shuffle(rng, n):
    """Consumes the draws of `rng.shuffle` on `n` items, without shuffling anything."""
    if _FAST_SHUFFLE and n <= len(_SHIFT):
        _advance_shuffle_fast(rng, n)
    else:
        rng.shuffle([None] * n)


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """The instance and masking options of the original's flags (original-release §2.2)."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 40
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    ngram: int = 3
    do_lower_case: bool = True
    do_whole_word_mask: bool = True
    do_permutation: bool = False
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False

    def validate(self):
        if self.max_seq_length < 5:
            raise ValueError(
                "`max_seq_length` must be at least 5 ([CLS] A [SEP] B [SEP] with a target of 2 tokens). "
                f"Received: `max_seq_length={self.max_seq_length}`."
            )
        if self.max_predictions_per_seq < 1:
            raise ValueError(f"`max_predictions_per_seq` must be >= 1. Received: `{self.max_predictions_per_seq}`.")
        if self.dupe_factor < 1:
            raise ValueError(f"`dupe_factor` must be >= 1. Received: `dupe_factor={self.dupe_factor}`.")
        if self.ngram < 1:
            raise ValueError(f"`ngram` must be >= 1. Received: `ngram={self.ngram}`.")
        for name in ("masked_lm_prob", "short_seq_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"`{name}` must be in [0, 1]. Received: `{name}={value}`.")


@dataclasses.dataclass
class PretrainingStats:
    """What a run wrote; `summary()` is the line logged at the end."""

    documents: int = 0
    instances: int = 0
    tokens: int = 0
    masked: int = 0
    sop_positive: int = 0
    document_passes: int = 0
    short_target_passes: int = 0
    short_target_instances: int = 0
    replaced_characters: int = 0
    lines_with_replacements: int = 0
    ngram_counts: tuple = ()
    ngram_draws: tuple = ()

    def merge(self, other):
        for field in dataclasses.fields(self):
            if field.name in ("ngram_counts", "ngram_draws"):
                a, b = list(getattr(self, field.name)), list(getattr(other, field.name))
                size = max(len(a), len(b))
                a += [0] * (size - len(a))
                b += [0] * (size - len(b))
                setattr(self, field.name, tuple(x + y for x, y in zip(a, b)))
            else:
                setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    @property
    def masked_fraction(self):
        return self.masked / max(self.tokens, 1)

    @property
    def sop_positive_fraction(self):
        return self.sop_positive / max(self.instances, 1)

    @property
    def short_target_fraction(self):
        return self.short_target_passes / max(self.document_passes, 1)

    @property
    def short_instance_fraction(self):
        return self.short_target_instances / max(self.instances, 1)

    def summary(self):
        return (
            f"{self.instances} instances from {self.documents} documents, {self.tokens} tokens; "
            f"masked fraction {self.masked_fraction:.4f}; SOP label 1 (swapped/random) "
            f"{self.sop_positive_fraction:.4f}, label 0 {1 - self.sop_positive_fraction:.4f}; short-target "
            f"fraction {self.short_target_fraction:.4f} of document passes "
            f"({self.short_instance_fraction:.4f} of instances); n-gram sizes drawn {list(self.ngram_draws)}, "
            f"masked (after the back-off) {list(self.ngram_counts)}; "
            f"{self.replaced_characters} undecodable byte sequences replaced in "
            f"{self.lines_with_replacements} lines."
        )


# ---------------------------------------------------------------------------------------------------
# Tokenization to ids, with the start-piece flag of every token.


class _TokenSpace:
    """Tokenizes lines to int32 ids and knows, per id, whether it starts a word.

    An unknown SentencePiece piece has the id of `<unk>` but its own surface text, and the original
    decides "start piece" on that text. The rare `<unk>` tokens whose text is not a start piece get the
    extended id `vocab_size` (a row of `is_start` that is False), mapped back to `<unk>` when written.
    """

    def __init__(self, vocab_file, spm_model_file, do_lower_case):
        self.tokenizer = tokenization.FullTokenizer(
            vocab_file=vocab_file, do_lower_case=do_lower_case, spm_model_file=spm_model_file
        )
        self.do_lower_case = do_lower_case
        self.is_spm = self.tokenizer.sp_model is not None
        vocab = self.tokenizer.vocab
        self.vocab_size = len(vocab)
        ids = {}
        for token in ("[CLS]", "[SEP]", "[MASK]"):
            if token not in vocab:
                raise ValueError(
                    f"The vocabulary (`{spm_model_file or vocab_file}`) has no `{token}` token; ALBERT's "
                    "`spm_train` flags make [CLS], [SEP], [MASK] control symbols (ids 2, 3, 4)."
                )
            ids[token] = vocab[token]
        self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]
        start_fn = is_start_piece_sp if self.is_spm else is_start_piece_bert
        # vocab is {token: id}; list order is id order for both tokenizers (the original's vocab_words).
        self.is_start = np.zeros(self.vocab_size + 1, dtype=bool)
        for token, i in vocab.items():
            self.is_start[i] = start_fn(token)
        if self.is_spm:
            sp = self.tokenizer.sp_model
            self.unk_id = sp.unk_id()
            # Lines with an <unk> or a piece that ends in "<digit>," take the exact piece-level path.
            self.needs_pieces = np.zeros(self.vocab_size, dtype=bool)
            self.needs_pieces[self.unk_id] = True
            for token, i in vocab.items():
                if len(token) > 1 and token[-1] == "," and token[-2].isdigit():
                    self.needs_pieces[i] = True
        else:
            self.unk_id = vocab.get("[UNK]", 0)

    def process_line(self, line):
        """The original's per-line preprocessing (before the empty-line test)."""
        if self.is_spm:
            return tokenization.fast_preprocess_text(line, lower=self.do_lower_case)
        return line.strip()

    def _exact_spm_ids(self, line):
        sp = self.tokenizer.sp_model
        out = []
        for piece in tokenization.encode_pieces(sp, line):
            i = sp.PieceToId(piece)
            if i == self.unk_id and not is_start_piece_sp(piece):
                i = self.vocab_size
            out.append(i)
        return out

    def tokenize_lines(self, lines):
        """Ids (list of int32 arrays) of non-empty processed lines."""
        if not self.is_spm:
            tok = self.tokenizer
            return [np.asarray(tok.convert_tokens_to_ids(tok.tokenize(line)), dtype=np.int32) for line in lines]
        encoded = self.tokenizer.sp_model.encode(lines, out_type=int, num_threads=1)
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
        flat = np.fromiter((i for e in encoded for i in e), dtype=np.int32, count=int(lengths.sum()))
        flagged = self.needs_pieces[flat]
        if flagged.any():
            line_of_token = np.repeat(np.arange(len(lines)), lengths)
            for j in np.unique(line_of_token[flagged]).tolist():
                encoded[j] = self._exact_spm_ids(lines[j])
            lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
            flat = np.fromiter((i for e in encoded for i in e), dtype=np.int32, count=int(lengths.sum()))
        return np.split(flat, np.cumsum(lengths)[:-1]) if len(lines) else []


# ---------------------------------------------------------------------------------------------------
# tf.train.Example bytes, encoded directly. Example{features: Features{feature: map<string, Feature>}},
# each Feature an Int64List (packed varints) or a FloatList (packed little-endian float32). Tests parse
# the bytes back and compare them with the message the protobuf API builds.


def _varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varints(values):
    """Concatenated protobuf varints of a 1-D array of non-negative integers."""
    v = np.asarray(values, dtype=np.uint64)
    if v.size == 0:
        return b""
    top = int(v.max())
    if top < 0x80:
        return v.astype(np.uint8).tobytes()
    width = (top.bit_length() + 6) // 7
    groups = ((v[:, None] >> (np.arange(width, dtype=np.uint64) * 7)) & 0x7F).astype(np.uint8)  # [n, width]
    lengths = np.ones(v.shape[0], dtype=np.int64)
    for b in range(1, width):
        lengths += v >= (1 << (7 * b))
    column = np.arange(width)[None, :]
    groups |= ((column < lengths[:, None] - 1) * 0x80).astype(np.uint8)
    return groups[column < lengths[:, None]].tobytes()


def _entry_prefix(key, payload_length, float_list=False):
    """The bytes of one `feature` map entry up to its packed payload of `payload_length` bytes."""
    packed = b"\x0a" + _varint(payload_length)  # Int64List/FloatList field 1, packed
    feature_length = len(packed) + payload_length
    feature = (b"\x12" if float_list else b"\x1a") + _varint(feature_length) + packed
    entry_head = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(feature) + payload_length) + feature
    return b"\x0a" + _varint(len(entry_head) + payload_length) + entry_head


def encode_example(input_ids, input_mask, segment_ids, token_boundary, masked_lm_positions, masked_lm_ids,
                   masked_lm_weights, next_sentence_label):
    """Serialized `tf.train.Example` with the PRETRAINING schema, features in the original's order."""
    parts = []
    for key, values in ((b"input_ids", input_ids), (b"input_mask", input_mask), (b"segment_ids", segment_ids),
                        (b"token_boundary", token_boundary), (b"masked_lm_positions", masked_lm_positions),
                        (b"masked_lm_ids", masked_lm_ids)):
        payload = _varints(values)
        parts += [_entry_prefix(key, len(payload)), payload]
    payload = np.asarray(masked_lm_weights, dtype="<f4").tobytes()
    parts += [_entry_prefix(b"masked_lm_weights", len(payload), float_list=True), payload]
    payload = _varints([next_sentence_label])
    parts += [_entry_prefix(b"next_sentence_labels", len(payload)), payload]
    body = b"".join(parts)
    return b"\x0a" + _varint(len(body)) + body


class _ExampleEncoder:
    """`encode_example` for one instance, with per-id varint tables and cached constant prefixes."""

    def __init__(self, max_seq_length, num_predictions, vocab_size, unk_id):
        self.seq = max_seq_length
        self.num_predictions = num_predictions
        # Extended id `vocab_size` (an <unk> that is not a start piece) is written as <unk>.
        self.id_bytes = [_varint(i) for i in range(vocab_size)] + [_varint(unk_id)]
        self.num_bytes = [_varint(i) for i in range(max_seq_length + 1)]  # masked positions
        self.zeros = b"\x00" * max(max_seq_length, 4 * num_predictions)
        self.ones = b"\x01" * max_seq_length
        self.mask_prefix = _entry_prefix(b"input_mask", max_seq_length)
        self.segment_prefix = _entry_prefix(b"segment_ids", max_seq_length)
        self.boundary_prefix = _entry_prefix(b"token_boundary", max_seq_length)
        self.weights_prefix = _entry_prefix(b"masked_lm_weights", 4 * num_predictions, float_list=True)
        self.label_entries = [_entry_prefix(b"next_sentence_labels", 1) + bytes([label]) for label in (0, 1)]
        self.one_float = np.float32(1.0).astype("<f4").tobytes()
        self._prefixes = {}

    def _prefix(self, key, length):
        prefix = self._prefixes.get((key, length))
        if prefix is None:
            prefix = self._prefixes[(key, length)] = _entry_prefix(key, length)
        return prefix

    def encode(self, ids, len_a, boundary, positions, labels, label):
        """ids: list of extended ids (unpadded); boundary: bytes; positions, labels: lists (unpadded)."""
        seq = self.seq
        length = len(ids)
        pad = self.zeros[:seq - length]
        id_bytes = self.id_bytes
        ids_payload = b"".join(map(id_bytes.__getitem__, ids)) + pad
        n = len(positions)
        pred_pad = self.zeros[:self.num_predictions - n]
        pos_payload = b"".join(map(self.num_bytes.__getitem__, positions)) + pred_pad
        lab_payload = b"".join(map(id_bytes.__getitem__, labels)) + pred_pad
        body = b"".join((
            self._prefix(b"input_ids", len(ids_payload)), ids_payload,
            self.mask_prefix, self.ones[:length], pad,
            self.segment_prefix, self.zeros[:len_a + 2], self.ones[:length - len_a - 2], pad,
            self.boundary_prefix, boundary, pad,
            self._prefix(b"masked_lm_positions", len(pos_payload)), pos_payload,
            self._prefix(b"masked_lm_ids", len(lab_payload)), lab_payload,
            self.weights_prefix, self.one_float * n, self.zeros[:4 * (self.num_predictions - n)],
            self.label_entries[label],
        ))
        return b"\x0a" + _varint(len(body)) + body


# ---------------------------------------------------------------------------------------------------
# One shard: documents -> instances, written unshuffled to a temp file with their offsets.


def shard_seed(random_seed, shard_index):
    """The seed of shard `shard_index`: `random_seed` itself for shard 0, else a SHA-256 derived one."""
    if shard_index == 0:
        return random_seed
    digest = hashlib.sha256(f"albert_tf/{random_seed}/{shard_index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class _ShardProcessor:
    """Runs §5.1 (after reading) to §5.4 on one shard with its own `random.Random` and NumPy Generator."""

    def __init__(self, space, options):
        self.space = space
        self.options = options
        o = options
        self.max_num_tokens = o.max_seq_length - 3
        self.num_predictions = o.max_predictions_per_seq * (1 + int(o.do_permutation))
        pvals = 1.0 / np.arange(1, o.ngram + 1)
        pvals /= pvals.sum(keepdims=True)
        if not o.favor_shorter_ngram:
            pvals = pvals[::-1]
        # `Generator.choice(ngrams, p=p)` is `searchsorted(cdf, random(), side="right")` with this cdf.
        p = pvals / pvals.sum(keepdims=True)
        cdf = p.cumsum()
        cdf /= cdf[-1]
        self.cdf = cdf.tolist()
        self.encoder = _ExampleEncoder(o.max_seq_length, self.num_predictions, space.vocab_size, space.unk_id)

    # -- reading ------------------------------------------------------------------------------------
    def read_documents(self, raw_lines, stats):
        """Raw byte lines -> non-empty documents, each a list of int32 id arrays (one per sentence)."""
        space = self.space
        documents = [[]]
        pending = []  # processed lines waiting for a batch tokenization: (document index, text)

        def flush():
            if not pending:
                return
            for (d, _), ids in zip(pending, space.tokenize_lines([t for _, t in pending])):
                if len(ids):
                    documents[d].append(ids)
            pending.clear()

        for raw in raw_lines:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace")
                stats.replaced_characters += line.count("\ufffd") - raw.count("\ufffd".encode("utf-8"))
                stats.lines_with_replacements += 1
            line = space.process_line(line)
            if not line:
                documents.append([])
                continue
            pending.append((len(documents) - 1, line))
            if len(pending) >= 4096:
                flush()
        flush()
        documents = [d for d in documents if d]
        return documents

    # -- instances ----------------------------------------------------------------------------------
    def run(self, raw_lines, seed, temp_path, progress=None):
        """Writes the shard's instances to `temp_path`; returns (offsets, shuffled order, stats)."""
        stats = PretrainingStats(ngram_counts=(0,) * self.options.ngram, ngram_draws=(0,) * self.options.ngram)
        documents = self.read_documents(raw_lines, stats)
        del raw_lines
        rng = random.Random(seed)
        self.rng = rng
        self.np_rng = np.random.default_rng(seed % (1 << 64))
        self.uniforms = []
        self.uniform_pos = 0
        self.ngram_counts = [0] * self.options.ngram
        self.ngram_draws = [0] * self.options.ngram
        self.short_passes = 0
        documents = [documents[j] for j in shuffled_range(rng, len(documents))]
        stats.documents = len(documents)
        if not documents:
            return np.zeros(1, np.int64), [], stats

        # Flat storage: sentence s of the shard is tokens[sent_off[s]:sent_off[s + 1]].
        sentence_lengths = [len(s) for d in documents for s in d]
        self.tokens = np.concatenate([s for d in documents for s in d]).astype(np.int32)
        self.sent_off = [0] + np.cumsum(sentence_lengths).tolist()
        self.sent_len = sentence_lengths
        doc_sizes = [len(d) for d in documents]
        self.doc_off = [0] + np.cumsum(doc_sizes).tolist()
        del documents

        offsets = [0]
        position = 0
        started = time.time()
        with open(temp_path, "wb") as f:
            for dupe in range(self.options.dupe_factor):
                for d in range(len(doc_sizes)):
                    for record, label, n_tokens, n_masked, short in self._instances_from_document(d):
                        f.write(record)
                        position += len(record)
                        offsets.append(position)
                        stats.instances += 1
                        stats.tokens += n_tokens
                        stats.masked += n_masked
                        stats.sop_positive += label
                        stats.short_target_instances += short
                    stats.document_passes += 1
                    if progress is not None and d % 256 == 0:
                        progress(dupe, d, len(doc_sizes), stats.instances, time.time() - started)
        stats.short_target_passes = self.short_passes
        order = shuffled_range(rng, len(offsets) - 1)  # rng.shuffle(instances)
        stats.ngram_counts = tuple(self.ngram_counts)
        stats.ngram_draws = tuple(self.ngram_draws)
        return np.asarray(offsets, dtype=np.int64), order, stats

    def _draw_ngram(self):
        if self.uniform_pos >= len(self.uniforms):
            self.uniforms = self.np_rng.random(4096).tolist()
            self.uniform_pos = 0
        u = self.uniforms[self.uniform_pos]
        self.uniform_pos += 1
        n = bisect.bisect_right(self.cdf, u) + 1
        self.ngram_draws[n - 1] += 1
        return n

    def _instances_from_document(self, document_index):
        o = self.options
        rng = self.rng
        rand = rng.random
        randint = rng.randint
        sent_off, sent_len, doc_off = self.sent_off, self.sent_len, self.doc_off
        max_num_tokens = self.max_num_tokens
        s_lo, s_hi = doc_off[document_index], doc_off[document_index + 1]
        n_sentences = s_hi - s_lo
        num_documents = len(doc_off) - 1

        target_seq_length = max_num_tokens
        short = 0
        if rand() < o.short_seq_prob:
            target_seq_length = randint(2, max_num_tokens)
            short = 1
            self.short_passes += 1

        chunk_first = s_lo  # the chunk is sentences chunk_first .. s_lo + i
        current_length = 0
        i = 0
        while i < n_sentences:
            s = s_lo + i
            current_length += sent_len[s]
            if i == n_sentences - 1 or current_length >= target_seq_length:
                n_chunk = s - chunk_first + 1
                a_end = 1
                if n_chunk >= 2:
                    a_end = randint(1, n_chunk - 1)
                a = [sent_off[chunk_first], sent_off[chunk_first + a_end]]
                if n_chunk == 1 or (o.random_next_sentence and rand() < 0.5):
                    is_random_next = 1
                    target_b_length = target_seq_length - (a[1] - a[0])
                    for _ in range(10):
                        random_document_index = randint(0, num_documents - 1)
                        if random_document_index != document_index:
                            break
                    r_lo = doc_off[random_document_index]
                    r_n = doc_off[random_document_index + 1] - r_lo
                    random_start = randint(0, r_n - 1)
                    b_len = 0
                    j = random_start
                    while j < r_n:
                        b_len += sent_len[r_lo + j]
                        if b_len >= target_b_length:
                            break
                        j += 1
                    j = min(j, r_n - 1)
                    b = [sent_off[r_lo + random_start], sent_off[r_lo + j + 1]]
                    # The unused segments of the chunk are "put back".
                    i -= n_chunk - a_end
                elif not o.random_next_sentence and rand() < 0.5:
                    is_random_next = 1
                    b = [sent_off[chunk_first + a_end], sent_off[s + 1]]
                    a, b = b, a  # SOP: the swapped order is label 1.
                else:
                    is_random_next = 0
                    b = [sent_off[chunk_first + a_end], sent_off[s + 1]]
                # truncate_seq_pair: shorten the longer one, from the front or the back with p=0.5.
                len_a, len_b = a[1] - a[0], b[1] - b[0]
                while len_a + len_b > max_num_tokens:
                    if len_a > len_b:
                        if rand() < 0.5:
                            a[0] += 1
                        else:
                            a[1] -= 1
                        len_a -= 1
                    else:
                        if rand() < 0.5:
                            b[0] += 1
                        else:
                            b[1] -= 1
                        len_b -= 1
                yield self._make_instance(a, b, is_random_next) + (short,)
                chunk_first = s_lo + i + 1
                current_length = 0
            i += 1

    def _make_instance(self, a, b, is_random_next):
        space = self.space
        tokens = self.tokens
        len_a, len_b = a[1] - a[0], b[1] - b[0]
        length = len_a + len_b + 3
        ids = np.empty(length, dtype=np.int32)
        ids[0] = space.cls_id
        ids[1:len_a + 1] = tokens[a[0]:a[1]]
        ids[len_a + 1] = space.sep_id
        ids[len_a + 2:length - 1] = tokens[b[0]:b[1]]
        ids[length - 1] = space.sep_id
        output, positions, boundary, original = self._mask(ids, len_a)
        labels = [original[p] for p in positions]
        record = self.encoder.encode(output, len_a, boundary, positions, labels, is_random_next)
        return record, is_random_next, length, len(positions)

    def _mask(self, ids, len_a):
        """create_masked_lm_predictions on extended ids.

        Returns:
            (output ids list, sorted masked positions, token_boundary bytes, input ids list).
        """
        o = self.options
        space = self.space
        rng = self.rng
        rand = rng.random
        length = len(ids)
        start = space.is_start[ids]
        sep_a = len_a + 1
        # token_boundary: 1 for [CLS]/[SEP] and for start pieces.
        start[0] = start[sep_a] = start[length - 1] = True
        boundary = start.view(np.uint8).tobytes()
        original = ids.tolist()
        output = list(original)
        if o.masked_lm_prob == 0:
            return output, [], boundary, original
        # Candidates skip [CLS] and both [SEP]; a word may continue across the first [SEP] (as the
        # original, whose "previous candidate" ignores the [SEP] in between).
        n_cand = length - 3
        if o.do_whole_word_mask:
            new_word = np.concatenate((start[1:sep_a], start[sep_a + 1:length - 1]))
            new_word[0] = True
            word_start = np.flatnonzero(new_word).tolist()
        else:
            word_start = list(range(n_cand))
        num_words = len(word_start)
        word_start.append(n_cand)
        num_to_predict = min(o.max_predictions_per_seq, max(1, int(round(length * o.masked_lm_prob))))

        cand_pos = list(range(1, sep_a)) + list(range(sep_a + 1, length - 1))  # candidate -> position
        order = shuffled_range(rng, num_words)  # rng.shuffle(ngram_indexes)
        covered = set()
        masked = []
        draw = self._draw_ngram
        counts = self.ngram_counts
        mask_id = space.mask_id
        top_id = space.vocab_size - 1
        for w in order:
            if len(masked) >= num_to_predict:
                break
            n = draw()
            end = min(w + n, num_words)
            size = word_start[end] - word_start[w]
            n -= 1
            while len(masked) + size > num_to_predict:
                if n == 0:
                    break
                end = min(w + n, num_words)
                size = word_start[end] - word_start[w]
                n -= 1
            if len(masked) + size > num_to_predict:
                continue
            index_set = cand_pos[word_start[w]:word_start[end]]
            if not covered.isdisjoint(index_set):
                continue
            counts[end - w - 1] += 1
            for index in index_set:
                covered.add(index)
                if rand() < 0.8:
                    output[index] = mask_id
                elif rand() < 0.5:
                    pass
                else:
                    output[index] = rng.randint(0, top_id)
                masked.append(index)

        # The original shuffles ngram_indexes again; only the permutation step looks at the new order.
        if o.do_permutation:
            order = [order[j] for j in shuffled_range(rng, num_words)]
        else:
            advance_shuffle(rng, num_words)

        if o.do_permutation:
            select = set()
            for w in order:
                if len(select) >= num_to_predict:
                    break
                n = draw()
                end = min(w + n, num_words)
                size = word_start[end] - word_start[w]
                n -= 1
                while len(select) + size > num_to_predict:
                    if n == 0:
                        break
                    end = min(w + n, num_words)
                    size = word_start[end] - word_start[w]
                    n -= 1
                if len(select) + size > num_to_predict:
                    continue
                index_set = cand_pos[word_start[w]:word_start[end]]
                if not (covered.isdisjoint(index_set) and select.isdisjoint(index_set)):
                    continue
                select.update(index_set)
            select = sorted(select)
            permuted = list(select)
            rng.shuffle(permuted)
            before = list(output)
            for src, tgt in zip(select, permuted):
                output[src] = before[tgt]
                masked.append(src)
        masked.sort()
        return output, masked, boundary, original


# ---------------------------------------------------------------------------------------------------
# Workers.

_WORKER = {}


def _worker_init(vocab_file, spm_model_file, options):
    _WORKER["processor"] = _ShardProcessor(_TokenSpace(vocab_file, spm_model_file, options.do_lower_case), options)


def _worker_run(shard_index, raw_lines, seed, temp_path):
    processor = _WORKER["processor"]
    offsets, order, stats = processor.run(raw_lines, seed, temp_path)
    return shard_index, offsets, order, stats


# ---------------------------------------------------------------------------------------------------
# Reading shards of raw lines.


def expand_input_files(input_file):
    """Comma-separated globs -> file list; a pattern that matches nothing is an error naming it."""
    patterns = [p for p in (input_file.split(",") if isinstance(input_file, str) else input_file) if p]
    if not patterns:
        raise ValueError(f"`input_file` names no file. Received: `input_file={input_file!r}`.")
    files = []
    for pattern in patterns:
        matched = tf.io.gfile.glob(pattern)
        if not matched:
            raise ValueError(f"`input_file`: no file matches `{pattern}` (missing input file).")
        files.extend(matched)
    return files


def _iter_shards(input_files, shard_bytes):
    """Yields (raw lines, bytes) per shard; a shard is cut only at a blank line (a document boundary).

    Lines end at `\n` only, as the original's `readline`; a file's last line ends at the end of the
    file (documents do continue into the next file, as in the original).
    """
    lines = []
    size = 0
    for path in input_files:
        carry = b""
        with tf.io.gfile.GFile(path, "rb") as reader:
            while True:
                block = reader.read(1 << 20)
                if not block:
                    break
                parts = (carry + block).split(b"\n")
                carry = parts.pop()
                for line in parts:
                    if size >= shard_bytes and not line.strip():
                        yield lines, size
                        lines, size = [], 0
                    lines.append(line)
                    size += len(line) + 1
        if carry:
            lines.append(carry)
            size += len(carry)
    if lines:
        yield lines, size


def write_pretraining_examples(
    input_files,
    output_files,
    vocab_file=None,
    spm_model_file=None,
    options=PretrainingOptions(),
    num_workers=1,
    shard_size_mb=32.0,
):
    """Writes ALBERT pretraining TFRecords (original-release §5) from raw text files.

    Args:
        input_files: str of comma-separated globs, or list of paths; one sentence per line, blank line
            between documents.
        output_files: str (comma-separated) or list of TFRecord paths, filled round-robin.
        vocab_file: WordPiece `vocab.txt` (used when `spm_model_file` is not given).
        spm_model_file: SentencePiece `.model`.
        options: `PretrainingOptions` (the original's flags).
        num_workers: int, processes; the output does not depend on it.
        shard_size_mb: float, raw text per shard (memory per worker is about this times a small factor).

    Returns:
        `PretrainingStats` of the whole run.
    """
    options.validate()
    if not spm_model_file and not vocab_file:
        raise ValueError("`vocab_file` or `spm_model_file` is required (both are None).")
    for name, path in (("spm_model_file", spm_model_file), ("vocab_file", None if spm_model_file else vocab_file)):
        if path and not tf.io.gfile.exists(path):
            raise ValueError(f"`{name}`: the file `{path}` does not exist.")
    if num_workers < 1:
        raise ValueError(f"`num_workers` must be >= 1. Received: `num_workers={num_workers}`.")
    if shard_size_mb <= 0:
        raise ValueError(f"`shard_size_mb` must be positive. Received: `shard_size_mb={shard_size_mb}`.")
    files = expand_input_files(input_files)
    if isinstance(output_files, str):
        output_files = [f for f in output_files.split(",") if f]
    if not output_files:
        raise ValueError(f"`output_file` names no file. Received: `{output_files!r}`.")
    total_bytes = sum(tf.io.gfile.stat(f).length for f in files)
    logging.info("Reading %d input files (%.1f MB):", len(files), total_bytes / 1e6)
    for f in files:
        logging.info("  %s", f)

    run_id = uuid.uuid4().hex[:8]
    temp_outputs = [f"{path}.tmp-{run_id}" for path in output_files]
    # Shard files are local: next to the first output, or in the system temp dir for remote outputs.
    if "://" in output_files[0]:
        out_dir = tempfile.gettempdir()
    else:
        out_dir = os.path.dirname(os.path.abspath(output_files[0]))
    for path in output_files:
        parent = os.path.dirname(path)
        if parent:
            tf.io.gfile.makedirs(parent)
    shard_bytes = int(shard_size_mb * 1e6)
    stats = PretrainingStats(ngram_counts=(0,) * options.ngram, ngram_draws=(0,) * options.ngram)
    started = time.time()
    done_bytes = 0
    written = 0
    writers = [tf.io.TFRecordWriter(p) for p in temp_outputs]
    temp_shards = set()

    def shard_path(k):
        return os.path.join(out_dir, f".albert-shard-{run_id}-{k:05d}.tmp")

    def emit(shard_index, offsets, order, shard_stats, shard_size):
        nonlocal written, done_bytes
        path = shard_path(shard_index)
        if order:
            # pread, not mmap: mapped pages of a large shard file would count as resident memory.
            fd = os.open(path, os.O_RDONLY)
            try:
                for j in order:
                    start = int(offsets[j])
                    writers[written % len(writers)].write(os.pread(fd, int(offsets[j + 1]) - start, start))
                    written += 1
            finally:
                os.close(fd)
        if os.path.exists(path):  # a shard without documents writes no file
            os.remove(path)
        temp_shards.discard(path)
        stats.merge(shard_stats)
        done_bytes += shard_size
        elapsed = time.time() - started
        rate = stats.instances / max(elapsed, 1e-9)
        eta = elapsed * (total_bytes - done_bytes) / max(done_bytes, 1)
        logging.info(
            "shard %d done: %d documents, %d instances (%.1f instances/s), %.1f%% of input, ETA %.0f s",
            shard_index, stats.documents, stats.instances, rate, 100.0 * done_bytes / max(total_bytes, 1), eta,
        )

    try:
        shards = _iter_shards(files, shard_bytes)
        if num_workers == 1:
            processor = _ShardProcessor(_TokenSpace(vocab_file, spm_model_file, options.do_lower_case), options)
            last_log = [time.time()]

            def progress(dupe, d, n_docs, n_instances, elapsed):
                if time.time() - last_log[0] >= 30:
                    last_log[0] = time.time()
                    logging.info("  current shard: pass %d/%d, document %d/%d, %d instances (%.1f/s)",
                                 dupe + 1, options.dupe_factor, d, n_docs, n_instances,
                                 n_instances / max(elapsed, 1e-9))

            for k, (raw_lines, size) in enumerate(shards):
                temp_shards.add(shard_path(k))
                offsets, order, shard_stats = processor.run(
                    raw_lines, shard_seed(options.random_seed, k), shard_path(k), progress)
                emit(k, offsets, order, shard_stats, size)
        else:
            context = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(
                max_workers=num_workers, mp_context=context, initializer=_worker_init,
                initargs=(vocab_file, spm_model_file, options),
            ) as pool:
                in_flight = {}  # shard index -> (future, bytes)
                next_to_emit = 0
                for k, (raw_lines, size) in enumerate(shards):
                    temp_shards.add(shard_path(k))
                    in_flight[k] = (pool.submit(_worker_run, k, raw_lines, shard_seed(options.random_seed, k),
                                                shard_path(k)), size)
                    del raw_lines
                    # Keep at most num_workers + 1 shards of text in flight: bounded memory.
                    while len(in_flight) > num_workers:
                        future, shard_size = in_flight.pop(next_to_emit)
                        emit(*future.result()[:4], shard_size)
                        next_to_emit += 1
                while in_flight:
                    future, shard_size = in_flight.pop(next_to_emit)
                    emit(*future.result()[:4], shard_size)
                    next_to_emit += 1
        for w in writers:
            w.close()
        writers = []
        if stats.documents == 0:
            raise ValueError(
                f"The corpus is empty: no line of `{','.join(files)}` gives a token (expected one sentence "
                "per line, blank lines between documents)."
            )
        for temp, final in zip(temp_outputs, output_files):
            tf.io.gfile.rename(temp, final, overwrite=True)
    finally:
        for w in writers:
            w.close()
        for path in list(temp_shards) + temp_outputs:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
    elapsed = time.time() - started
    logging.info("Wrote %d instances to %d files in %.1f s (%.1f instances/s).", stats.instances,
                 len(output_files), elapsed, stats.instances / max(elapsed, 1e-9))
    logging.info("Summary: %s", stats.summary())
    return stats


# ---------------------------------------------------------------------------------------------------
# Command line: the original's flags (same names and defaults) plus --num_workers and --shard_size_mb.


def define_flags():
    flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files/globs).")
    flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files).")
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained on.")
    flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
    flags.DEFINE_string("input_file_mode", "r", "The data format of the input file (kept for compatibility; "
                        "files are read as bytes and decoded as UTF-8 with replacement).")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text.")
    flags.DEFINE_bool("do_whole_word_mask", True, "Whether to use whole word masking rather than per-piece.")
    flags.DEFINE_bool("do_permutation", False, "Whether to do the permutation training.")
    flags.DEFINE_bool("favor_shorter_ngram", True, "Whether to favour shorter n-grams (p(n) ~ 1/n).")
    flags.DEFINE_bool("random_next_sentence", False, "BERT NSP negatives from random documents instead of SOP.")
    flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
    flags.DEFINE_integer("ngram", 3, "Maximum number of ngrams to mask.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
    flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation (every random choice).")
    flags.DEFINE_integer("dupe_factor", 40, "Number of times to duplicate the input data (with different masks).")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences shorter than the maximum.")
    flags.DEFINE_integer("num_workers", 1, "Worker processes; the output is the same for any number.")
    flags.DEFINE_float("shard_size_mb", 32.0, "Raw text per shard (memory bound; shuffles are per shard).")


def _main(argv):
    del argv
    fl = flags.FLAGS
    options = PretrainingOptions(
        max_seq_length=fl.max_seq_length,
        max_predictions_per_seq=fl.max_predictions_per_seq,
        random_seed=fl.random_seed,
        dupe_factor=fl.dupe_factor,
        masked_lm_prob=fl.masked_lm_prob,
        short_seq_prob=fl.short_seq_prob,
        ngram=fl.ngram,
        do_lower_case=fl.do_lower_case,
        do_whole_word_mask=fl.do_whole_word_mask,
        do_permutation=fl.do_permutation,
        favor_shorter_ngram=fl.favor_shorter_ngram,
        random_next_sentence=fl.random_next_sentence,
    )
    write_pretraining_examples(
        fl.input_file,
        fl.output_file,
        vocab_file=fl.vocab_file,
        spm_model_file=fl.spm_model_file,
        options=options,
        num_workers=fl.num_workers,
        shard_size_mb=fl.shard_size_mb,
    )


def main():
    define_flags()
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    app.run(_main)


if __name__ == "__main__":
    main()
