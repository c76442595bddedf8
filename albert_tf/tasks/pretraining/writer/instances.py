"""Pretraining instances: one shard of raw lines -> documents -> SOP pairs with n-gram masks -> records.

The algorithm of the original `create_pretraining_data.py`, step by step and with the same order of calls on
one `random.Random(seed)`:

* reading (`create_training_instances`): one sentence per line; a line that is empty after normalisation
  starts a new document; SentencePiece lines go through `preprocess_text(line, lower=do_lower_case)`,
  WordPiece lines through `line.strip()`; empty documents are dropped and the documents shuffled;
  `dupe_factor` passes make the instances, which are shuffled.
* instances (`create_instances_from_document`): short targets with `short_seq_prob`, chunks of sentences,
  the A/B split, the SOP swap (or NSP negatives from a random document with `random_next_sentence`),
  `truncate_seq_pair` from the front or the back with p=0.5.
* masking (`create_masked_lm_predictions`): whole-word candidates (`_is_start_piece_sp` / `##`),
  `num_to_predict`, shuffled n-gram starts, the n-gram size p(n) ∝ 1/n (reversed without
  `favor_shorter_ngram`), the back-off to shorter n-grams, the no-op "covered" loop left out, 80/10/10 per
  token, the second shuffle, `do_permutation`.
* records: the schema `albert_tf.tasks.pretraining.data.PRETRAINING`, encoded by `pretraining_records`.

Where this differs from the original, on purpose:

1. Reproducible: the original draws the n-gram size from NumPy's unseeded global RNG. Here it comes from
   `numpy.random.default_rng(seed)` (the draws of `Generator.choice(ngrams, p=p)`, taken in blocks), so the
   same `--random_seed` gives the same bytes.
2. Per shard: a shard (a run of whole documents, cut by the writer) is processed as the original processes
   its whole corpus, with its own seed `shard_seed(random_seed, k)`; a corpus that fits in one shard gives
   the original's instances (with fix 1).
3. The digit-comma split of `encode_pieces` follows the original as it runs under Python 3: the `▁` that
   SentencePiece puts in front of the re-encoded digits is never removed (the original compares a `str`
   piece with the `bytes` constant `SPIECE_UNDERLINE`, which is never equal).

`ShardProcessor` is the one implementation; the local writer (`pretraining_writer`) and the Apache Beam
pipeline (`pretraining_beam`) differ only in how they read shards, distribute them and write records.
"""

import bisect
import dataclasses
import hashlib
import random
import time

import numpy as np
import tensorflow as tf

from albert_tf.text import tokenization
from albert_tf.tasks.pretraining.writer.records import ExampleEncoder
from albert_tf.tasks.pretraining.writer.shuffle import advance_shuffle, shuffled_range
from albert_tf.errors import InputError
from albert_tf.options import MaskedLmOptions, TokenizerOptions, option


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


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingDataOptions(MaskedLmOptions, TokenizerOptions):
    """The instance and masking options: the flags of the original `create_pretraining_data.py`.

    `max_seq_length`, `max_predictions_per_seq` (`MaskedLmOptions`) and the tokenizer's `do_lower_case`
    (`TokenizerOptions`) are the options of the same names of the runners; the writers take the tokenizer's
    files as their `vocab_file` / `spm_model_file` arguments (the command passes these fields).
    """

    # The seed of the data (every random choice of the writer), not of a training run (`RuntimeOptions`).
    random_seed: int = option(12345, "Random seed for data generation (every random choice).")
    dupe_factor: int = option(40, "Number of times to duplicate the input data (with different masks).")
    masked_lm_prob: float = option(0.15, "Masked LM probability.")
    short_seq_prob: float = option(0.1, "Probability of creating sequences shorter than the maximum.")
    ngram: int = option(3, "Maximum number of ngrams to mask.")
    do_whole_word_mask: bool = option(True, "Whether to use whole word masking rather than per-piece.")
    do_permutation: bool = option(False, "Whether to do the permutation training.")
    favor_shorter_ngram: bool = option(True, "Whether to favour shorter n-grams (p(n) ~ 1/n).")
    random_next_sentence: bool = option(False, "BERT NSP negatives from random documents instead of SOP.")

    def validate(self):
        if self.max_seq_length < 5:
            raise InputError(
                "`max_seq_length` must be at least 5 ([CLS] A [SEP] B [SEP] with a target of 2 tokens). "
                f"Received: `max_seq_length={self.max_seq_length}`."
            )
        if self.max_predictions_per_seq < 1:
            raise InputError(f"`max_predictions_per_seq` must be >= 1. Received: `{self.max_predictions_per_seq}`.")
        if self.dupe_factor < 1:
            raise InputError(f"`dupe_factor` must be >= 1. Received: `dupe_factor={self.dupe_factor}`.")
        if self.ngram < 1:
            raise InputError(f"`ngram` must be >= 1. Received: `ngram={self.ngram}`.")
        for name in ("masked_lm_prob", "short_seq_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InputError(f"`{name}` must be in [0, 1]. Received: `{name}={value}`.")


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

    def as_dict(self):
        """The counts and the derived fractions, for a JSON summary."""
        out = dataclasses.asdict(self)
        out["ngram_counts"], out["ngram_draws"] = list(self.ngram_counts), list(self.ngram_draws)
        for name in ("masked_fraction", "sop_positive_fraction", "short_target_fraction", "short_instance_fraction"):
            out[name] = getattr(self, name)
        out["summary"] = self.summary()
        return out

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


class TokenSpace:
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
                raise InputError(
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
                if tokenization.is_digit_comma_piece(token):
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


def check_vocab_file(vocab_file, spm_model_file):
    """Raises `ValueError` if `vocab_file` is not the `.vocab` of the SentencePiece model `spm_model_file`.

    With a SentencePiece model the original reads only the model, but its `--vocab_file` flag is required;
    users pass the `.vocab` written next to the model. A `.vocab` from another model means the wrong files
    were paired, so the pieces (first tab-separated field per line) must be the model's, in id order.
    """
    if not vocab_file or not spm_model_file:
        return
    pieces = list(tokenization.FullTokenizer(vocab_file=None, spm_model_file=spm_model_file).vocab)  # id order
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        data = f.read()
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise InputError(f"`vocab_file` `{vocab_file}` is not UTF-8 text ({e}); expected the `.vocab` file of "
                         f"`{spm_model_file}`.") from None
    if lines and lines[-1] == "":
        lines.pop()
    listed = [line.split("\t")[0] for line in lines]
    if listed != pieces:
        first = next((i for i, (a, b) in enumerate(zip(listed, pieces)) if a != b), min(len(listed), len(pieces)))
        raise InputError(
            f"`vocab_file` `{vocab_file}` does not match `spm_model_file` `{spm_model_file}`: {len(listed)} "
            f"pieces vs {len(pieces)}, first difference at line {first + 1} "
            f"({listed[first] if first < len(listed) else '<end>'!r} vs "
            f"{pieces[first] if first < len(pieces) else '<end>'!r}).")


# ---------------------------------------------------------------------------------------------------
# One shard: documents -> instances -> records.


def shard_seed(random_seed, shard_index):
    """The seed of shard `shard_index`: `random_seed` itself for shard 0, else a SHA-256 derived one."""
    if shard_index == 0:
        return random_seed
    digest = hashlib.sha256(f"albert_tf/{random_seed}/{shard_index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class ShardProcessor:
    """Raw lines of one shard -> serialized records, with the shard's own `random.Random` and NumPy Generator."""

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
        self.encoder = ExampleEncoder(o.max_seq_length, self.num_predictions, space.vocab_size, space.unk_id)

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
    def records(self, raw_lines, seed, stats, progress=None):
        """Yields the shard's serialized records in the order they are made; adds the shard to `stats`.

        The order is the original's before its final `rng.shuffle(instances)`; after the generator ends,
        `self.rng` is the shard's `random.Random` at that point, so `shuffled_range(self.rng, count)` gives
        the original's instance order. Memory holds the shard's tokens, not its records.

        Args:
            raw_lines: list of bytes, the shard's lines without their `\\n`.
            seed: int, the shard's seed (`shard_seed(random_seed, k)`).
            stats: `PretrainingStats`, updated in place.
            progress: optional callable(pass, document, documents, instances, seconds), called now and then.
        """
        documents = self.read_documents(raw_lines, stats)
        del raw_lines
        rng = random.Random(seed)
        self.rng = rng
        self.np_rng = np.random.default_rng(seed % (1 << 64))
        self.uniforms = []
        self.uniform_pos = 0
        self.ngram_counts = [0] * self.options.ngram
        self.ngram_draws = [0] * self.options.ngram
        documents = [documents[j] for j in shuffled_range(rng, len(documents))]
        stats.documents += len(documents)
        if not documents:
            return

        # Flat storage: sentence s of the shard is tokens[sent_off[s]:sent_off[s + 1]].
        sentence_lengths = [len(s) for d in documents for s in d]
        self.tokens = np.concatenate([s for d in documents for s in d]).astype(np.int32)
        self.sent_off = [0] + np.cumsum(sentence_lengths).tolist()
        self.sent_len = sentence_lengths
        doc_sizes = [len(d) for d in documents]
        self.doc_off = [0] + np.cumsum(doc_sizes).tolist()
        del documents

        made = 0
        started = time.time()
        for dupe in range(self.options.dupe_factor):
            for d in range(len(doc_sizes)):
                for record, label, n_tokens, n_masked, short in self._instances_from_document(d, stats):
                    yield record
                    made += 1
                    stats.instances += 1
                    stats.tokens += n_tokens
                    stats.masked += n_masked
                    stats.sop_positive += label
                    stats.short_target_instances += short
                stats.document_passes += 1
                if progress is not None and d % 256 == 0:
                    progress(dupe, d, len(doc_sizes), made, time.time() - started)
        stats.merge(PretrainingStats(ngram_counts=tuple(self.ngram_counts), ngram_draws=tuple(self.ngram_draws)))

    def _draw_ngram(self):
        if self.uniform_pos >= len(self.uniforms):
            self.uniforms = self.np_rng.random(4096).tolist()
            self.uniform_pos = 0
        u = self.uniforms[self.uniform_pos]
        self.uniform_pos += 1
        n = bisect.bisect_right(self.cdf, u) + 1
        self.ngram_draws[n - 1] += 1
        return n

    def _instances_from_document(self, document_index, stats):
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
            stats.short_target_passes += 1

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
        counts = self.ngram_counts
        mask_id = space.mask_id
        top_id = space.vocab_size - 1
        for n, index_set in self._ngram_spans(order, word_start, cand_pos, num_to_predict, covered, ()):
            counts[n - 1] += 1
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
        if not o.do_permutation:
            advance_shuffle(rng, num_words)
        else:
            order = [order[j] for j in shuffled_range(rng, num_words)]
            select = set()
            for _, index_set in self._ngram_spans(order, word_start, cand_pos, num_to_predict, select, covered):
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

    def _ngram_spans(self, order, word_start, cand_pos, num_to_predict, chosen, blocked):
        """The n-gram loop of `create_masked_lm_predictions`: yields (n, positions) of each accepted n-gram.

        For each start word in `order` until `chosen` holds `num_to_predict` positions: draw n, back off to
        shorter n-grams while the n-gram would exceed the budget (skip the start if one word does), and
        skip n-grams that overlap `chosen` or `blocked`. The caller adds the yielded positions to `chosen`
        before the next step.
        """
        num_words = len(word_start) - 1
        draw = self._draw_ngram
        for w in order:
            if len(chosen) >= num_to_predict:
                return
            n = draw()
            while n:
                end = min(w + n, num_words)
                if len(chosen) + word_start[end] - word_start[w] <= num_to_predict:
                    break
                n -= 1
            if not n:
                continue
            index_set = cand_pos[word_start[w]:word_start[end]]
            if chosen.isdisjoint(index_set) and (not blocked or blocked.isdisjoint(index_set)):
                yield end - w, index_set
