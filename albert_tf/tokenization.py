"""ALBERT tokenization, exactly as the original `tokenization.py` (original-release §6).

Two tokenizers live behind one `FullTokenizer`:

* SentencePiece (every English release): `tokenize` is `encode_pieces`, which does **not** normalise or
  lower-case; callers run `preprocess_text(text, lower=do_lower_case)` first, as the original's data
  scripts do.
* BERT WordPiece (the Chinese releases): `BasicTokenizer` + `WordpieceTokenizer` on a `vocab.txt`.

What tf-models-official's `official.nlp.tools.tokenization` copied unchanged from the original is reused
from there (`preprocess_text`, `encode_pieces`, `BasicTokenizer`, `WordpieceTokenizer`, `convert_to_unicode`,
`printable_text`); `tests/test_tokenization.py` checks them against an independent transcription of §6.
Two pieces differ in tf-models and are written here: `load_vocab` (the original keeps the first
whitespace field of a line and the first id of a duplicated token) and the WordPiece word-length limit
(200 characters in the original, 400 in tf-models).

One deliberate choice: the digit-comma rule of `encode_pieces` follows §6 (and the original under
Python 2, and tf-models): when the piece being split did not start with `▁`, the `▁` that
SentencePiece puts in front of the re-encoded digits is removed. Under Python 3 the original compares a
`str` piece with the `bytes` constant `SPIECE_UNDERLINE`, so that removal never happens there.
"""

import collections
import functools
import re
import unicodedata

import sentencepiece as spm
import tensorflow as tf
from official.nlp.tools import tokenization as _tfm

SPIECE_UNDERLINE = "▁"

# Reused verbatim: these are line-for-line the original's functions under Python 3.
convert_to_unicode = _tfm.convert_to_unicode
printable_text = _tfm.printable_text
BasicTokenizer = _tfm.BasicTokenizer
whitespace_tokenize = _tfm.whitespace_tokenize


def preprocess_text(inputs, remove_space=True, lower=False):
    """The original's text normalisation: collapse whitespace, NFKD, drop combining marks, lower-case.

    Args:
        inputs: str, the raw text.
        remove_space: bool, whether to `" ".join(inputs.strip().split())` first.
        lower: bool, whether to lower-case (the English releases are uncased: pass `do_lower_case`).

    Returns:
        The normalised str.
    """
    return _tfm.preprocess_text(inputs, remove_space=remove_space, lower=lower)


def encode_pieces(sp_model, text, return_unicode=True, sample=False):
    """SentencePiece pieces of `text`, with the original's digit-comma split (`▁1990,` -> `▁1990`, `,`).

    Args:
        sp_model: a loaded `sentencepiece.SentencePieceProcessor`.
        text: str, already passed through `preprocess_text`.
        return_unicode: kept for the original's signature; pieces are always `str` under Python 3.
        sample: bool, whether to sample a segmentation (`SampleEncodeAsPieces(text, 64, 0.1)`).

    Returns:
        A list of str pieces.
    """
    del return_unicode  # Python 2 only in the original.
    return _tfm.encode_pieces(sp_model, text, sample=sample)


def encode_ids(sp_model, text, sample=False):
    """`PieceToId` over `encode_pieces(sp_model, text, sample=sample)`."""
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def load_vocab(vocab_file):
    """A WordPiece `vocab.txt` as an ordered {token: id}, as the original reads it.

    The token is the first whitespace-separated field of a line (a blank line is the token `" "`); a
    token seen twice keeps its first id and does not take a new one.
    """
    vocab = collections.OrderedDict()
    with tf.io.gfile.GFile(vocab_file, "rb") as reader:
        for raw in reader:
            line = convert_to_unicode(raw)
            token = line.strip().split()[0] if line.strip() else " "
            if token not in vocab:
                vocab[token] = len(vocab)
    return vocab


def convert_by_vocab(vocab, items):
    """Looks every item up in `vocab` (a KeyError names an item that is not there)."""
    return [vocab[item] for item in items]


class WordpieceTokenizer(_tfm.WordpieceTokenizer):
    """Greedy longest-match-first WordPiece, with the original's 200-character word limit."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        super().__init__(vocab, unk_token=unk_token, max_input_chars_per_word=max_input_chars_per_word)


def _load_sp_model(spm_model_file):
    # Read through tf.io.gfile, as the original, so `gs://` paths work; the proto is parsed in memory.
    with tf.io.gfile.GFile(spm_model_file, "rb") as f:
        proto = f.read()
    sp_model = spm.SentencePieceProcessor()
    sp_model.LoadFromSerializedProto(proto)
    return sp_model, proto


class FullTokenizer:
    """End-to-end tokenizer of the original: SentencePiece when `spm_model_file` is given, else WordPiece.

    Args:
        vocab_file: str or None, a WordPiece `vocab.txt` (used only without `spm_model_file`).
        do_lower_case: bool, lower-case and strip accents in the WordPiece `BasicTokenizer`. The
            SentencePiece path never lower-cases: call `preprocess_text(text, lower=do_lower_case)` first.
        spm_model_file: str or None, a SentencePiece `.model` file.

    Attributes:
        vocab: {token: id}; for SentencePiece every piece, control symbols included, in id order.
        inv_vocab: {id: token}.
        sp_model: the `SentencePieceProcessor`, or None for WordPiece.
        sp_model_proto: bytes of the `.model` file, or None (for in-graph tokenizers).
    """

    def __init__(self, vocab_file=None, do_lower_case=True, spm_model_file=None):
        self.do_lower_case = do_lower_case
        self.sp_model = None
        self.sp_model_proto = None
        if spm_model_file:
            self.sp_model, self.sp_model_proto = _load_sp_model(spm_model_file)
            self.vocab = {self.sp_model.IdToPiece(i): i for i in range(self.sp_model.GetPieceSize())}
        elif vocab_file:
            self.vocab = load_vocab(vocab_file)
            self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        else:
            raise ValueError(
                "`FullTokenizer` needs `spm_model_file` or `vocab_file`. "
                f"Received: `vocab_file={vocab_file!r}`, `spm_model_file={spm_model_file!r}`."
            )
        self.inv_vocab = {v: k for k, v in self.vocab.items()}

    @classmethod
    def from_hub_module(cls, hub_module, use_spm=True, do_lower_case=True):
        """The tokenizer of a TF-Hub ALBERT module (or release dir / tarball): its SentencePiece asset.

        The original runs the module's `tokenization_info` signature, whose `vocab_file` is the `.model`
        asset and `do_lower_case` is True for every English release; here the asset is found on disk
        with `albert_tf.checkpoints.resolve_source`, so no TF1 graph is needed.

        Args:
            hub_module: str, a TF-Hub module directory, a release directory or a `.tar.gz`.
            use_spm: bool, use the asset as `spm_model_file` (the original's default); False reads it as a
                WordPiece `vocab_file` (the Chinese modules).
            do_lower_case: bool, as the module's `tokenization_info`.
        """
        from albert_tf.checkpoints import resolve_source

        with resolve_source(hub_module) as source:
            asset = source.spm_model_file if use_spm else source.vocab_file
            if asset is None:
                raise ValueError(
                    f"`hub_module`: no {'SentencePiece model' if use_spm else 'vocab file'} found in "
                    f"`{hub_module}` (expected it in the module's assets).")
            if use_spm:
                return cls(do_lower_case=do_lower_case, spm_model_file=asset)
            return cls(vocab_file=asset, do_lower_case=do_lower_case)

    def tokenize(self, text):
        """Pieces of `text` (SentencePiece: `encode_pieces`; WordPiece: basic then wordpiece split)."""
        if self.sp_model is not None:
            return encode_pieces(self.sp_model, text, return_unicode=False)
        split_tokens = []
        for token in self.basic_tokenizer.tokenize(text):
            split_tokens.extend(self.wordpiece_tokenizer.tokenize(token))
        return split_tokens

    def convert_tokens_to_ids(self, tokens):
        """Ids of `tokens` (SentencePiece: `PieceToId`, unknown pieces -> `<unk>`)."""
        if self.sp_model is not None:
            return [self.sp_model.PieceToId(printable_text(token)) for token in tokens]
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        """Tokens of `ids`."""
        if self.sp_model is not None:
            return [self.sp_model.IdToPiece(int(id_)) for id_ in ids]
        return convert_by_vocab(self.inv_vocab, ids)


# ---------------------------------------------------------------------------------------------------
# Fast equivalents used by the pretraining writer (same results, checked by tests/test_tokenization.py).

# Every code point with a non-zero canonical combining class lies below U+20000 (planes 2-16 hold CJK
# ideographs, tags and private use, all class 0); a test checks this against a scan of all of Unicode.
_COMBINING_SCAN_LIMIT = 0x20000


@functools.lru_cache(maxsize=None)
def combining_code_point_ranges(limit=_COMBINING_SCAN_LIMIT):
    """((first, last), ...) code point ranges with `unicodedata.combining(c) != 0` (Python's Unicode)."""
    ranges = []
    start = prev = None
    for cp in range(limit):
        if unicodedata.combining(chr(cp)):
            if start is None:
                start = cp
            elif cp != prev + 1:
                ranges.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    return tuple(ranges)


@functools.lru_cache(maxsize=None)
def _combining_class_regex():
    body = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in combining_code_point_ranges()
    )
    return re.compile(f"[{body}]+")


def fast_preprocess_text(inputs, lower=False):
    """`preprocess_text(inputs, lower=lower)` with the per-character Python loop replaced by a regex.

    ASCII text is already NFKD and has no combining marks, so only whitespace and case change.
    """
    outputs = " ".join(inputs.split())
    if not outputs.isascii():
        outputs = _combining_class_regex().sub("", unicodedata.normalize("NFKD", outputs))
    return outputs.lower() if lower else outputs
