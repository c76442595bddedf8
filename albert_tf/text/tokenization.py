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
# Adapted from google-research/ALBERT/tokenization.py. Changes: Python 3 only (the `six` branches and the
# Python 2 byte-string conversions are gone); `encode_pieces` writes out what the original's digit-comma
# branch does under Python 3 instead of its bytes comparisons; docstrings; `FullTokenizer.from_hub_module`
# finds the SentencePiece asset on disk instead of running the TF1 hub signature; errors are `InputError`
# (a `ValueError`, as the original raises); `validate_case_matches_checkpoint` is BERT's function of the
# same name (google-research/bert/tokenization.py), written for ALBERT's release names; the fast
# preprocessing helpers of the pretraining writer are added at the end.
"""ALBERT tokenization, as the original `tokenization.py`.

Two tokenizers live behind one `FullTokenizer`:

* SentencePiece (every English release): `tokenize` is `encode_pieces`, which does **not** normalise or
  lower-case; callers run `preprocess_text(text, lower=do_lower_case)` first, as the original's data
  scripts do.
* BERT WordPiece (the Chinese releases): `BasicTokenizer` + `WordpieceTokenizer` on a `vocab.txt`.

The digit-comma rule of `encode_pieces` is the original's as it runs under Python 3: a piece such as
`▁1990,` or `90,` is re-encoded without its `▁` and followed by `,`, and the re-encoded digits keep the
`▁` that SentencePiece puts in front of them (`90,` -> the pieces of `90`, the first starting with `▁`,
then `,`). The original means
to drop that `▁` when the split piece did not start with one, but it compares `str` characters with the
bytes constant `u"▁".encode("utf-8")`, which under Python 3 never match, so it never drops it.
tf-models-official (`official/nlp/tools/tokenization.py`) and transformers drop it; ids differ from
theirs wherever a digit-comma piece without `▁` occurs.
"""

import collections
import functools
import os
import re
import unicodedata

import sentencepiece as spm
import tensorflow as tf

from albert_tf.checkpoints.sources import resolve_source
from albert_tf.errors import InputError

# The original's constant is the UTF-8 bytes of "▁" (its callers write `SPIECE_UNDERLINE.decode("utf-8")`);
# the str form is what this module compares pieces with.
SPIECE_UNDERLINE = "▁".encode("utf-8")
_UNDERLINE = "▁"

# The directory or file names of Google's ALBERT releases and TF-Hub modules (`albert_base_v2.tar.gz`
# unpacks to `albert_base/`): every one is an uncased model, whose `30k-clean.model` was trained on
# lower-cased text (the Chinese releases' WordPiece vocabulary is lower-cased too).
_UNCASED_RELEASE = re.compile(r"^albert_(?:en_)?(?:base|large|xlarge|xxlarge)(?:_v[12]|_zh)?(?:\.tar\.gz|\.tgz)?$")


def check_spm_vocab_size(spm_model, vocab_size, spm_name, config_name):
    """Raises an `InputError` naming both files unless the SentencePiece model has `vocab_size` pieces.

    A model whose embedding table is larger than its tokenizer's vocabulary still runs, silently, on wrong ids
    (the tokenizer of another release), so the two must agree exactly, as the original's files do.

    Args:
        spm_model: bytes of a SentencePiece model, or a path to one.
        vocab_size: int, the config's `vocab_size`.
        spm_name: str, how to name the SentencePiece model in the message (its path or flag).
        config_name: str, how to name the config in the message.
    """
    processor = spm.SentencePieceProcessor()
    try:
        if isinstance(spm_model, (bytes, bytearray)):
            proto = bytes(spm_model)
        else:
            with tf.io.gfile.GFile(spm_model, "rb") as f:
                proto = f.read()
        processor.LoadFromSerializedProto(proto)
    except (RuntimeError, OSError, tf.errors.OpError) as e:
        raise InputError(f"`{spm_name}` is not a SentencePiece model: {e}") from None
    pieces = processor.GetPieceSize()
    if pieces != vocab_size:
        raise InputError(f"The SentencePiece model {spm_name} has {pieces} pieces but `vocab_size` of {config_name} "
                         f"is {vocab_size}: they must be the files of one model.")


def preprocess_text(inputs, remove_space=True, lower=False):
    """The original's text normalisation: collapse whitespace, NFKD, drop combining marks, lower-case.

    Args:
        inputs: str, the raw text.
        remove_space: bool, whether to `" ".join(inputs.strip().split())` first.
        lower: bool, whether to lower-case (the English releases are uncased: pass `do_lower_case`).

    Returns:
        The normalised str.
    """
    outputs = " ".join(inputs.strip().split()) if remove_space else inputs
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join([c for c in outputs if not unicodedata.combining(c)])
    if lower:
        outputs = outputs.lower()
    return outputs


def is_digit_comma_piece(piece):
    """Whether `encode_pieces` splits `piece`: longer than one character, last `,`, second-to-last a digit.

    "Digit" is Python's `str.isdigit` (so `²,` counts), as in the original.
    """
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def encode_pieces(sp_model, text, return_unicode=True, sample=False):
    """SentencePiece pieces of `text`, with the original's digit-comma split as it runs under Python 3.

    Every piece that `is_digit_comma_piece` is replaced by `EncodeAsPieces(piece[:-1] without "▁")`
    followed by `","`. The re-encoded pieces are kept as SentencePiece returns them, with their leading
    `▁`: the original's attempt to drop it compares with a bytes constant and never succeeds under
    Python 3 (see the module docstring).

    Args:
        sp_model: a loaded `sentencepiece.SentencePieceProcessor`.
        text: str, already passed through `preprocess_text`.
        return_unicode: kept for the original's signature; pieces are always `str` under Python 3.
        sample: bool, whether to sample a segmentation (`SampleEncodeAsPieces(text, 64, 0.1)`); the
            digit-comma re-encoding is never sampled, as in the original.

    Returns:
        A list of str pieces.
    """
    del return_unicode  # Python 2 only in the original.
    if sample:
        pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
    else:
        pieces = sp_model.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        piece = printable_text(piece)
        if is_digit_comma_piece(piece):
            new_pieces.extend(sp_model.EncodeAsPieces(piece[:-1].replace(_UNDERLINE, "")))
            new_pieces.append(piece[-1])
        else:
            new_pieces.append(piece)
    return new_pieces


def encode_ids(sp_model, text, sample=False):
    """`PieceToId` over `encode_pieces(sp_model, text, sample=sample)`."""
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def convert_to_unicode(text):
    """`text` as str; bytes are decoded as UTF-8, dropping invalid sequences."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise InputError(f"Unsupported string type: {type(text)}")


def printable_text(text):
    """`text` as str for printing and logging (the same conversion as `convert_to_unicode` in Python 3)."""
    return convert_to_unicode(text)


def whitespace_tokenize(text):
    """Strips `text` and splits it on whitespace ([] for blank text)."""
    text = text.strip()
    if not text:
        return []
    return text.split()


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


def convert_tokens_to_ids(vocab, tokens):
    """Ids of `tokens` in `vocab` ({token: id}), as the original's module-level function."""
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    """Tokens of `ids` in `inv_vocab` ({id: token}), as the original's module-level function."""
    return convert_by_vocab(inv_vocab, ids)


def _checkpoint_names(init_checkpoint):
    """The names a checkpoint path can carry its release name in: itself, and its directory's."""
    path = str(init_checkpoint).rstrip("/")
    names = [os.path.basename(path)]
    if os.path.basename(path).startswith("model.ckpt"):
        names.append(os.path.basename(os.path.dirname(path)))
    return names


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises an `InputError` when `do_lower_case` is False for a checkpoint of an uncased ALBERT release.

    BERT's function of this name detects the casing from the checkpoint's name, because the config does not
    store it; every ALBERT release (English and Chinese, v1 and v2, and the TF-Hub modules) is uncased, so a
    checkpoint named after one (`albert_base/model.ckpt-best`, `albert_base_v2.tar.gz`, the name
    `albert_xxlarge_v2`) needs `do_lower_case=True`. Any other name is not checked.

    Args:
        do_lower_case: bool, the `--do_lower_case` of the run.
        init_checkpoint: str or None, the `--init_checkpoint` of the run (a path or a release name).
    """
    if not init_checkpoint or do_lower_case:
        return
    for name in _checkpoint_names(init_checkpoint):
        if _UNCASED_RELEASE.match(name):
            raise InputError(
                f"You passed in `--do_lower_case=False` with `--init_checkpoint={init_checkpoint}`, but "
                f"`{name}` is an uncased ALBERT release: its vocabulary was trained on lower-cased text. "
                "Pass `--do_lower_case=True`.")


class BasicTokenizer:
    """BERT's basic tokenization: clean text, space out CJK characters, lower-case and strip accents, split
    on punctuation.

    Args:
        do_lower_case: bool, lower-case and strip accents (`Mn` marks after NFD).
    """

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        """Basic tokens of `text` (str or UTF-8 bytes)."""
        text = convert_to_unicode(text)
        text = self._clean_text(text)
        # CJK ideographs become tokens of their own (the Chinese models' vocabularies are per character).
        text = self._tokenize_chinese_chars(text)
        split_tokens = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text):
        text = unicodedata.normalize("NFD", text)
        return "".join(char for char in text if unicodedata.category(char) != "Mn")

    @staticmethod
    def _run_split_on_punc(text):
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    def _tokenize_chinese_chars(self, text):
        return "".join(f" {char} " if self._is_chinese_char(ord(char)) else char for char in text)

    @staticmethod
    def _is_chinese_char(cp):
        # The CJK Unified Ideographs blocks (not Hangul or kana, which are written with spaces).
        return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
                or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
                or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)

    @staticmethod
    def _clean_text(text):
        # Drops NUL, U+FFFD and control characters; every whitespace character becomes a space.
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece (`##` marks a continuation), with the original's 200-character
    word limit (longer words become `unk_token`).

    Args:
        vocab: {token: id} (only membership is used).
        unk_token: str, the token of a word that cannot be split.
        max_input_chars_per_word: int, longer words become `unk_token`.
    """

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        """WordPiece tokens of whitespace-separated `text` (already through `BasicTokenizer`)."""
        text = convert_to_unicode(text)
        output_tokens = []
        for token in whitespace_tokenize(text):
            if len(token) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            sub_tokens = []
            start = 0
            while start < len(token):
                end = len(token)
                cur_substr = None
                while start < end:
                    substr = token[start:end]
                    if start > 0:
                        substr = "##" + substr
                    if substr in self.vocab:
                        cur_substr = substr
                        break
                    end -= 1
                if cur_substr is None:
                    sub_tokens = None
                    break
                sub_tokens.append(cur_substr)
                start = end
            if sub_tokens is None:
                output_tokens.append(self.unk_token)
            else:
                output_tokens.extend(sub_tokens)
        return output_tokens


def _is_whitespace(char):
    # Tab, newline and carriage return count as whitespace here, not as control characters.
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    # Every non-letter/number ASCII character counts as punctuation ("^", "$", "`" are not Unicode `P*`).
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


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
            raise InputError(
                "`FullTokenizer` needs `spm_model_file` or `vocab_file`. "
                f"Received: `vocab_file={vocab_file!r}`, `spm_model_file={spm_model_file!r}`."
            )
        self.inv_vocab = {v: k for k, v in self.vocab.items()}

    @classmethod
    def from_scratch(cls, vocab_file, do_lower_case, spm_model_file):
        """`FullTokenizer(vocab_file, do_lower_case, spm_model_file)`, the original's constructor for files."""
        return cls(vocab_file, do_lower_case, spm_model_file)

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
        with resolve_source(hub_module) as source:
            asset = source.spm_model_file if use_spm else source.vocab_file
            if asset is None:
                raise InputError(
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
# Fast equivalents used by the pretraining writer (same results, checked by tests/text/test_tokenization.py).

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
