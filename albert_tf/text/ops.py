"""ALBERT text normalisation and SentencePiece tokenization as TensorFlow ops (tensorflow-text).

The same steps as the Python path `encode_ids(sp, preprocess_text(text, lower=do_lower_case))`
(as the original `tokenization.py`), all in the graph, so a SavedModel can take raw strings:

0. bytes that are not UTF-8 are dropped, as the original's `convert_to_unicode` decodes them under Python 3
   (`bytes.decode("utf-8", "ignore")`): `tf.strings.unicode_transcode(errors="ignore")` drops exactly the bytes
   Python drops (lone continuation bytes, cut multi-byte sequences, overlong forms, surrogates, 0xc0/0xc1/0xf5-0xff;
   `tests/text/test_text_ops.py` compares the two on thousands of byte strings);
1. whitespace: `" ".join(text.strip().split())`, with Python's own set of whitespace characters;
2. `unicodedata.normalize("NFKD", ·)` -> `text.normalize_utf8(·, "NFKD")`;
3. drop every character with a non-zero canonical combining class (the class list is Python's, written
   into the regex at construction);
4. lower-case (`tf.strings.lower(·, encoding="utf-8")`);
5. SentencePiece ids (`text.SentencepieceTokenizer` on the same model proto);
6. the digit-comma rule of `encode_pieces` as the original runs under Python 3 (`▁1990,` -> the pieces
   of `1990`, then `,`; the re-encoded digits keep their leading `▁`), with ragged ops.

`TextPipeline` puts the tokenizer and the packing of sentences and pairs together (raw strings -> packed features); the
`serve_text` exports and `albert_tf.AlbertPreprocessor` both use it. Only `AlbertTextTokenizer` (and so
`TextPipeline`) needs tensorflow-text (imported when one is built, see `require_tensorflow_text`);
`pack_inputs` and `truncate_pair_lengths` are plain TensorFlow.

Known differences from the Python path (`tests/text/test_text_ops.py` shows them): Unicode versions. Python
3.11's `unicodedata` is Unicode 14.0, tensorflow-text's ICU normalisation is newer and `tf.strings.lower`
older. Of the 1.1M code points, 158 normalise differently (each tried with one character between ASCII
letters): 40 capital letters new in Unicode 14 that `tf.strings.lower` leaves upper-case (U+2C2F, U+A7C0,
U+A7D0, U+A7D6, U+A7D8 and Vithkuqi U+10570-U+10595) and 118 code points unassigned in Unicode 14 that
ICU decomposes. The context-dependent final-sigma rule of `str.lower` is matched.
"""

import numpy as np
import sentencepiece as spm
import tensorflow as tf

from albert_tf.text import modes as text_modes
from albert_tf.text import tokenization
from albert_tf.errors import InputError, MissingPackageError

_UNDERLINE = "▁"


def _code_point_class(ranges):
    """An RE2 character class for [(first, last)] code point ranges."""
    parts = []
    for first, last in ranges:
        parts.append(f"\\x{{{first:x}}}" if first == last else f"\\x{{{first:x}}}-\\x{{{last:x}}}")
    return "[" + "".join(parts) + "]"


def _ranges(code_points):
    ranges = []
    for cp in code_points:
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return [tuple(r) for r in ranges]


# Python's `str.split()` / `str.strip()` whitespace (str.isspace), as an RE2 class.
_WHITESPACE_CLASS = _code_point_class(_ranges(cp for cp in range(0x3100) if chr(cp).isspace()))


def _digit_comma_table(sp_model):
    """bool [vocab]: pieces that `encode_pieces` splits (length > 1, last `,`, second-to-last a digit)."""
    return np.array([tokenization.is_digit_comma_piece(sp_model.IdToPiece(i))
                     for i in range(sp_model.GetPieceSize())], dtype=bool)


def tensorflow_text_requirement():
    """The tensorflow-text requirement that fits this TensorFlow, e.g. `tensorflow-text~=2.21.0`: its compiled ops
    are built against one TensorFlow minor version, and another minor's wheel requires (and installs) that one."""
    major, minor = tf.__version__.split(".")[:2]
    return f"tensorflow-text~={major}.{minor}.0"


def require_tensorflow_text():
    """The `tensorflow_text` module, or an ImportError that says how to install it.

    Imported here, not at module top, so that the rest of albert_tf (and `pack_inputs` here) works
    without tensorflow-text: only the in-graph tokenizer and `serve_text` exports need its ops, and a
    process that loads such an export must import it to register them.
    """
    try:
        import tensorflow_text  # Deferred: optional dependency, see the docstring.
    except ImportError as e:
        raise MissingPackageError(
            "The in-graph tokenizer (`AlbertTextTokenizer`, `serve_text` exports) needs the `tensorflow-text` "
            f"package, which is not installed. Install it with `pip install {tensorflow_text_requirement()}` (on a "
            "TPU VM with `--no-deps`, see README).") from e
    return tensorflow_text


def drop_invalid_utf8(strings):
    """tf.string [...] with the bytes that are not UTF-8 dropped: in the graph what the original's
    `convert_to_unicode` does under Python 3 (`bytes.decode("utf-8", "ignore")`), byte for byte; valid UTF-8
    passes unchanged."""
    strings = tf.convert_to_tensor(strings, dtype=tf.string)
    return tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")


class AlbertTextTokenizer(tf.Module):
    """Raw strings -> ALBERT SentencePiece ids, in the graph (for `tf.function`s and SavedModels).

    Args:
        spm_model_proto: bytes, the serialized SentencePiece model (the `.model` file's content).
        do_lower_case: bool, lower-case in the normalisation (True for every English release).
        name: optional module name.

    Example:
        tok = AlbertTextTokenizer(open("30k-clean.model", "rb").read())
        ids = tok.tokenize(tf.constant(["Hello world!"]))   # tf.RaggedTensor int32 [batch, (n)]
    """

    def __init__(self, spm_model_proto, do_lower_case=True, name=None):
        super().__init__(name=name)
        if isinstance(spm_model_proto, str):
            raise TypeError("`spm_model_proto` must be the bytes of the model, not a path. "
                            f"Received a str: `{spm_model_proto[:80]!r}`.")
        spm_model_proto = bytes(spm_model_proto)
        text = require_tensorflow_text()
        sp_model = spm.SentencePieceProcessor()
        sp_model.LoadFromSerializedProto(spm_model_proto)
        self.do_lower_case = bool(do_lower_case)
        self.vocab_size = sp_model.GetPieceSize()
        self._sp = text.SentencepieceTokenizer(model=spm_model_proto, out_type=tf.int32)
        self._digit_comma = tf.constant(_digit_comma_table(sp_model))
        self._comma_id = tf.constant(sp_model.PieceToId(","), tf.int32)
        self._combining = _code_point_class(tokenization.combining_code_point_ranges())

    def normalize(self, strings):
        """`preprocess_text(convert_to_unicode(strings), lower=do_lower_case)` as TF ops: tf.string [...] -> same
        shape (bytes that are not UTF-8 dropped, see `drop_invalid_utf8`)."""
        out = tf.strings.regex_replace(drop_invalid_utf8(strings), _WHITESPACE_CLASS + "+", " ")
        out = tf.strings.regex_replace(out, "^ | $", "")
        out = require_tensorflow_text().normalize_utf8(out, "NFKD")
        out = tf.strings.regex_replace(out, self._combining, "")
        if self.do_lower_case:
            out = tf.strings.lower(out, encoding="utf-8")
        return out

    def tokenize(self, strings):
        """Ids of raw strings: tf.string [batch] -> tf.RaggedTensor int32 [batch, (n)]."""
        return self.tokenize_normalized(self.normalize(strings))

    def tokenize_normalized(self, strings):
        """Ids of already normalised strings (`encode_ids` without `preprocess_text`)."""
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        if strings.shape.rank is not None and strings.shape.rank != 1:
            raise InputError(f"`strings` must be a batch of strings, shape [batch]. Received shape {strings.shape}.")
        ids = self._sp.tokenize(strings)                                          # [batch, (n)]
        return self._split_digit_commas(ids)

    def tokenize_with_masks(self, strings, mask_id):
        """Like `tokenize`, but each literal `[MASK]` (any case) becomes `mask_id` (fill-mask serving).

        The text between masks is tokenized piece by piece, as the Python path
        `[encode_ids(preprocess_text(chunk)) for chunk in text.split("[MASK]")]` joined by the mask id.
        """
        strings = drop_invalid_utf8(strings)   # before the split: `[MA<0xff>SK]` is a mask, as in Python
        chunks = tf.strings.split(tf.strings.regex_replace(strings, r"(?i)\[mask\]", "[MASK]"), "[MASK]")
        chunk_ids = self.tokenize(chunks.flat_values)                                     # [chunks, (n)]
        # Every chunk but the last of its row is followed by one [MASK].
        is_last = tf.ragged.range(chunks.row_lengths()) == tf.expand_dims(chunks.row_lengths() - 1, 1)
        mask_tail = fill_rows(1 - tf.cast(is_last.flat_values, tf.int64), mask_id)
        per_chunk = tf.concat([chunk_ids, mask_tail], axis=1)                             # [chunks, (n+1)]
        return tf.RaggedTensor.from_row_lengths(per_chunk, chunks.row_lengths()).merge_dims(1, 2)

    def _split_digit_commas(self, ids):
        """`encode_pieces`' rule: a piece like `▁1990,` or `90,` becomes the pieces of `1990` / `90` and `,`.

        The re-encoded digits keep the `▁` SentencePiece puts in front of them, as the original does under
        Python 3 (see `albert_tf.text.tokenization.encode_pieces`).
        """
        flat = ids.flat_values                                                    # [N]
        is_dc = tf.gather(self._digit_comma, flat)                                # [N]
        dc_ids = tf.boolean_mask(flat, is_dc)                                     # [K]
        pieces = self._sp.id_to_string(dc_ids)                                    # [K]
        stems = tf.strings.regex_replace(tf.strings.regex_replace(pieces, ",$", ""), _UNDERLINE, "")
        cur = self._sp.tokenize(stems)                                            # [K, (m)]
        comma = tf.fill(tf.stack([tf.shape(dc_ids, out_type=tf.int64)[0], tf.constant(1, tf.int64)]),
                        self._comma_id)
        replacement = tf.concat([cur, tf.RaggedTensor.from_tensor(comma)], axis=1)         # [K, (m + 1)]
        # Every token becomes a row: itself, or its replacement; then the rows are merged back.
        n_tokens = tf.shape(flat, out_type=tf.int64)[0]
        rows = tf.concat([tf.RaggedTensor.from_tensor(tf.expand_dims(flat, 1)), replacement], axis=0)
        dc_rank = tf.cumsum(tf.cast(is_dc, tf.int64)) - 1
        selector = tf.where(is_dc, n_tokens + dc_rank, tf.range(n_tokens))
        per_token = tf.gather(rows, selector)                                     # [N, (r)]
        lengths = tf.math.unsorted_segment_sum(per_token.row_lengths(), ids.value_rowids(), ids.nrows())
        return tf.RaggedTensor.from_row_lengths(per_token.flat_values, lengths)


def truncate_pair_lengths(len_a, len_b, max_tokens):
    """Lengths after the original `_truncate_seq_pair` (pop from the end of the longer one, ties -> b).

    Closed form of the loop: while `a + b > max_tokens`, the longer one (b on a tie) loses its last token.
    Args:
        len_a, len_b: int64 [batch].
        max_tokens: int, tokens left for both (max_seq_length - 3).

    Returns:
        (new_len_a, new_len_b), int64 [batch].
    """
    len_a = tf.cast(len_a, tf.int64)
    len_b = tf.cast(len_b, tf.int64)
    m = tf.cast(max_tokens, tf.int64)
    half_up = (m + 1) // 2
    cut_a = tf.minimum(len_a, tf.maximum(half_up, m - len_b))
    fits = len_a + len_b <= m
    new_a = tf.where(fits, len_a, cut_a)
    new_b = tf.where(fits, len_b, m - cut_a)
    return new_a, new_b


def keep_first(rt, limits):
    """Keeps the first `limits[i]` items of row i of a ragged `[batch, (n)]` tensor."""
    keep = tf.ragged.range(rt.row_lengths()) < tf.expand_dims(tf.cast(limits, rt.row_splits.dtype), 1)
    return tf.ragged.boolean_mask(rt, keep)


def keep_last(rt, n):
    """Keeps the last `n` items of every row (Python `tokens[-n:]`)."""
    lengths = rt.row_lengths()
    keep = tf.ragged.range(lengths) >= tf.expand_dims(lengths - tf.cast(n, lengths.dtype), 1)
    return tf.ragged.boolean_mask(rt, keep)


def fill_rows(lengths, value):
    """A ragged `[batch, (lengths[i])]` int32 tensor filled with `value`."""
    lengths = tf.cast(lengths, tf.int64)
    return tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(lengths)], tf.constant(value, tf.int32)), lengths)


def pack_segments(first, second, max_seq_length, cls_id, sep_id, second_optional=True):
    """`[CLS] first [SEP] (second [SEP])` + zero padding, as the original feature converters.

    Args:
        first: ragged int32 `[batch, (n)]`, already truncated.
        second: ragged int32 `[batch, (m)]`, already truncated.
        max_seq_length: int, padded length L.
        cls_id: int, id of `[CLS]`.
        sep_id: int, id of `[SEP]`.
        second_optional: bool; when True a row whose `second` is empty gets no second `[SEP]` (the
            original's `if tokens_b:`), else the second `[SEP]` is always written (SQuAD, RACE).

    Returns:
        dict of int32 `[batch, L]`: `input_ids`, `input_mask`, `segment_ids`, and `p_mask` (1 on `[SEP]`s,
        `first` and padding; 0 on `[CLS]` and `second`: the SQuAD layout with `first` = question).
    """
    batch = first.nrows()
    ones = tf.ones([batch], tf.int64)
    has_second = second.row_lengths() > 0 if second_optional else tf.ones([batch], tf.bool)
    last_sep = tf.cast(has_second, tf.int64)
    pieces = [  # (ids, segment, p_mask) per piece
        (fill_rows(ones, cls_id), 0, 0),
        (first, 0, 1),
        (fill_rows(ones, sep_id), 0, 1),
        (second, 1, 0),
        (fill_rows(last_sep, sep_id), 1, 1),
    ]
    ids = tf.concat([p[0] for p in pieces], axis=1)
    segments = tf.concat([tf.ones_like(p[0]) * p[1] for p in pieces], axis=1)
    p_mask = tf.concat([tf.ones_like(p[0]) * p[2] for p in pieces], axis=1)
    shape = [None, max_seq_length]
    return {
        "input_ids": ids.to_tensor(default_value=0, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(default_value=0, shape=shape),
        "segment_ids": segments.to_tensor(default_value=0, shape=shape),
        "p_mask": p_mask.to_tensor(default_value=1, shape=shape),
    }


def pack_inputs(ids_a, ids_b=None, max_seq_length=128, cls_id=2, sep_id=3):
    """`[CLS] a [SEP] (b [SEP])`, truncated as the original and padded with 0, as TF ops.

    Single segments keep their first `max_seq_length - 2` tokens; pairs are truncated by
    `_truncate_seq_pair(a, b, max_seq_length - 3)` (the longer one loses its last token until they fit).
    Whether there is a second segment is decided for the whole batch (`pack_pair_rows` decides per row).

    Args:
        ids_a: tf.RaggedTensor int [batch, (n)].
        ids_b: optional tf.RaggedTensor int [batch, (m)].
        max_seq_length: int, L.
        cls_id, sep_id: int, the `[CLS]` and `[SEP]` ids (2 and 3 with the original spm flags).

    Returns:
        dict of int32 [batch, L]: `input_ids`, `input_mask`, `segment_ids`.
    """
    max_seq_length = int(max_seq_length)
    if max_seq_length < (3 if ids_b is None else 4):
        raise InputError(f"`max_seq_length` is too small for [CLS]/[SEP]. Received: `{max_seq_length}`.")
    ids_a = tf.cast(ids_a, tf.int32)
    if ids_b is None:
        a = keep_first(ids_a, tf.minimum(ids_a.row_lengths(), max_seq_length - 2))
        b = fill_rows(tf.zeros([ids_a.nrows()], tf.int64), 0)
    else:
        ids_b = tf.cast(ids_b, tf.int32)
        new_a, new_b = truncate_pair_lengths(ids_a.row_lengths(), ids_b.row_lengths(), max_seq_length - 3)
        a, b = keep_first(ids_a, new_a), keep_first(ids_b, new_b)
    packed = pack_segments(a, b, max_seq_length, cls_id, sep_id, second_optional=ids_b is None)
    packed.pop("p_mask")
    return packed


def pack_pair_rows(ids_a, ids_b, max_seq_length, cls_id, sep_id):
    """GLUE `convert_single_example`: single `a[:L-2]`, pair `_truncate_seq_pair(a, b, L-3)`.

    Decided per row, as the original's `if tokens_b:`: a row whose `b` has no tokens (`text_b` empty) is a
    single segment, so one batch can mix both.

    Args:
        ids_a, ids_b: ragged int32 `[batch, (n)]`, `[batch, (m)]`.
        max_seq_length: int, L.
        cls_id, sep_id: int.

    Returns:
        dict of int32 `[batch, L]`: `input_ids`, `input_mask`, `segment_ids`.
    """
    len_a, len_b = ids_a.row_lengths(), ids_b.row_lengths()
    single = tf.equal(len_b, 0)
    pair_a, pair_b = truncate_pair_lengths(len_a, len_b, max_seq_length - 3)
    new_a = tf.where(single, tf.minimum(len_a, max_seq_length - 2), pair_a)
    new_b = tf.where(single, tf.zeros_like(len_b), pair_b)
    packed = pack_segments(keep_first(ids_a, new_a), keep_first(ids_b, new_b), max_seq_length, cls_id, sep_id,
                           second_optional=True)
    packed.pop("p_mask")
    return packed


def special_ids(spm_model_proto):
    """`{"[CLS]": id, "[SEP]": id, "[MASK]": id}` of a SentencePiece model; InputError when one is missing."""
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(spm_model_proto)
    ids = {}
    for piece in ("[CLS]", "[SEP]", "[MASK]"):
        piece_id = sp.PieceToId(piece)
        if piece_id == sp.unk_id():
            raise InputError(f"The SentencePiece model has no `{piece}` piece; ALBERT models are trained with "
                             "`--control_symbols=[CLS],[SEP],[MASK]` (the original README's `spm_train` command).")
        ids[piece] = piece_id
    return ids


class TextPipeline(tf.Module):
    """Raw strings -> packed int32 model features, in the graph: the tokenizer, the packing lengths and the
    special ids shared by `serve_text` exports (`albert_tf.export.saved_model`) and `albert_tf.AlbertPreprocessor`.

    `pack_texts` and `pack_masked_texts` take string tensors and return the features of sentences and pairs,
    packed as the original's `classifier_utils.py` (with literal `[MASK]`s for the `run_pretraining` inputs); a
    task with other inputs packs them in its own folder from the primitives here (`tokenize`, `keep_first`,
    `keep_last`, `pack_segments`), e.g. `albert_tf.tasks.squad.kind.pack_squad_texts(pipeline, ...)`.

    Args:
        spm_model_proto: bytes of the SentencePiece model.
        do_lower_case: bool, lower-case in the normalisation (the original `preprocess_text(lower=...)`).
        max_seq_length: int, L.
        vocab_size: optional int, the model's vocabulary size (the SentencePiece model may not have more pieces).
        name: optional module name.
        **lengths: the packing lengths of the registered text modes (`albert_tf.text.modes.lengths()`, e.g. the
            question limit of question-answering packing), each an attribute of the pipeline; a length not given
            is its mode's default.
    """

    def __init__(self, spm_model_proto, do_lower_case, max_seq_length, vocab_size=None, name="text_pipeline",
                 **lengths):
        super().__init__(name=name)
        self.tokenizer = AlbertTextTokenizer(spm_model_proto, do_lower_case=do_lower_case)
        self.max_seq_length = int(max_seq_length)
        for length, value in text_modes.resolve_lengths(lengths, self.max_seq_length, shrink=False).items():
            setattr(self, length, value)
        ids = special_ids(spm_model_proto)
        if vocab_size is not None and self.tokenizer.vocab_size > vocab_size:
            raise InputError(f"The SentencePiece model has {self.tokenizer.vocab_size} pieces but the model's "
                             f"`vocab_size` is {vocab_size}: they must come from the same release.")
        self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]

    def tokenize(self, strings):
        return tf.cast(self.tokenizer.tokenize(strings), tf.int32)                       # [batch, (n)]

    def tokenize_with_masks(self, strings):
        return tf.cast(self.tokenizer.tokenize_with_masks(strings, self.mask_id), tf.int32)

    def pack_pair(self, ids_a, ids_b):
        return pack_pair_rows(ids_a, ids_b, self.max_seq_length, self.cls_id, self.sep_id)

    # --- Strings -> features -------------------------------------------------------------------------------

    def pack_texts(self, text_a, text_b):
        """GLUE `convert_single_example` of `(text_a, text_b)` rows (an empty `text_b` makes a single segment).

        Returns dict of int32 `[batch, L]`: `input_ids`, `input_mask`, `segment_ids`.
        """
        return self.pack_pair(self.tokenize(text_a), self.tokenize(text_b))

    def pack_masked_texts(self, text_a, text_b, width=None):
        """`pack_texts` with each literal `[MASK]` as the mask id, plus the mask positions.

        Args:
            text_a, text_b: tf.string `[batch]`.
            width: optional int, the number of position slots P (masks past the first P are not predicted);
                default the batch's largest number of masks.

        Returns:
            `pack_texts`' features plus `mlm_positions` int32 `[batch, P]` (0 after the row's masks) and
            `mlm_weights` int32 `[batch, P]` (1 on real positions).
        """
        features = self.pack_pair(self.tokenize_with_masks(text_a), self.tokenize_with_masks(text_b))
        is_mask = tf.equal(features["input_ids"], self.mask_id)
        positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(self.max_seq_length, dtype=tf.int32),
                                                           tf.shape(is_mask)), is_mask)
        shape = None if width is None else [None, int(width)]
        features["mlm_positions"] = positions.to_tensor(default_value=0, shape=shape)      # [batch, P]
        features["mlm_weights"] = tf.ones_like(positions).to_tensor(default_value=0, shape=shape)
        return features
