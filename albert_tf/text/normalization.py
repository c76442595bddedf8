"""A SentencePiece model that carries the original's `preprocess_text` in its own normalization rules.

The original tokenizes raw text in two steps (`albert_tf.text.tokenization`): `preprocess_text(text,
lower=do_lower_case)` (whitespace runs to one space, NFKD, combining marks dropped, lower-casing), then
SentencePiece, whose model normalizes once more with its `nmt_nfkc` rules. A client that runs SentencePiece
alone on raw text (MediaPipe Tasks on Android, iOS and the web; `sentencepiece` in any language) skips the
first step and gets other ids for capitals, accents and non-ASCII spaces.

`albert_normalizer_spec(do_lower_case)` compiles both steps into one SentencePiece normalizer: for every code
point, the string that `nmt_nfkc(preprocess(c))` gives (Python's `unicodedata` and `str.lower`, the `nmt_nfkc`
table of the installed `sentencepiece`), and for every multi-character key of the `nmt_nfkc` table whose
composition survives the preprocessing (Hangul jamo, Indic two-part vowels) the whole key's string.
`normalized_model(proto, do_lower_case)` puts it into a release's model (`30k-clean.model` or any other)
in place of its `nmt_nfkc` rules (normalizer name `user_defined`), keeping the vocabulary, the scores and
the whitespace flags: nothing is retrained. `write_normalized_model` does it to a file (the command line is
`albert-normalize-spm`, `albert_tf.commands.normalize_spm`); `albert-export --format=mediapipe` packs such a
model into its file.

What no normalization rule can express (measured on a mixed corpus by `tests/text/test_normalization.py`;
docs/deploying_small.md):

* the original's digit-comma split (`encode_pieces`): a piece ending in a digit and a comma is re-encoded
  after SentencePiece has segmented the text; rules act before the segmentation;
* context-dependent lower-casing: Python's `str.lower` writes a capital sigma at the end of a word as `ς`,
  elsewhere as `σ`; a rule maps one string to one string, whatever follows it, so `Σ` always becomes `σ`.
"""

import dataclasses
import functools
import os
import unicodedata

import sentencepiece as spm
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2

from albert_tf import options as options_lib
from albert_tf.errors import InputError
from albert_tf.fileio import write_bytes_atomic
from albert_tf.options import option

NORMALIZER_NAME = "user_defined"
_MAX_CODE_POINT = 0x110000
_SURROGATES = range(0xD800, 0xE000)


def _preprocess_char(char, lower):
    """`preprocess_text` of one character, whitespace kept as a space (SentencePiece collapses the runs)."""
    if char.isspace():
        return " "
    text = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return text.lower() if lower else text


def _plain_normalizer(**source):
    return spm.SentencePieceNormalizer(**source, add_dummy_prefix=False, escape_whitespaces=False,
                                       remove_extra_whitespaces=False)


@functools.lru_cache(maxsize=2)
def normalization_rules(do_lower_case):
    """`((source, target), ...)`: the rules that make SentencePiece's normalizer give `nmt_nfkc(preprocess_text(
    text, lower=do_lower_case))` (see the module docstring); characters that map to themselves are left out."""
    nfkc = _plain_normalizer(rule_name="nmt_nfkc")
    table = nfkc.decompile()
    single = {key for key, _ in table if len(key) == 1}
    rules = {}
    for code_point in range(_MAX_CODE_POINT):
        if code_point in _SURROGATES:
            continue
        char = chr(code_point)
        text = _preprocess_char(char, do_lower_case)
        if text == char and char not in single:
            continue
        target = nfkc.normalize(text)
        if target != char:
            rules[char] = target
    for key, _ in table:
        if len(key) < 2 or any(unicodedata.combining(c) for c in key):
            continue
        whole = nfkc.normalize("".join(_preprocess_char(c, do_lower_case) for c in key))
        if whole != "".join(rules.get(c, c) for c in key):
            rules[key] = whole
    return tuple(sorted(rules.items()))


@functools.lru_cache(maxsize=2)
def albert_normalizer_spec(do_lower_case):
    """The serialized `NormalizerSpec` (name `user_defined`) of `normalization_rules(do_lower_case)`."""
    spec = sentencepiece_model_pb2.NormalizerSpec()
    spec.ParseFromString(_plain_normalizer(norm_map=list(normalization_rules(do_lower_case)))
                         .serialized_normalizer_spec())
    spec.name = NORMALIZER_NAME
    return spec.SerializeToString()


def normalized_model(proto, do_lower_case=True, source="the SentencePiece model"):
    """The serialized SentencePiece model `proto` (bytes) with `albert_normalizer_spec(do_lower_case)` as its
    normalization rules; its pieces, scores, trainer spec and whitespace flags are kept."""
    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(proto)
    except Exception as e:  # protobuf's DecodeError has no stable import path across its implementations
        raise InputError(f"`{source}` is not a SentencePiece model: {e}.") from e
    if not model.pieces:
        raise InputError(f"`{source}` is not a SentencePiece model: it has no pieces.")
    spec = sentencepiece_model_pb2.NormalizerSpec()
    spec.ParseFromString(albert_normalizer_spec(bool(do_lower_case)))
    model.normalizer_spec.name = spec.name
    model.normalizer_spec.precompiled_charsmap = spec.precompiled_charsmap
    model.ClearField("denormalizer_spec")
    return model.SerializeToString()


def write_normalized_model(spm_model_file, output, do_lower_case=True):
    """Writes `normalized_model` of the SentencePiece model file `spm_model_file` to `output` (a temporary name,
    then renamed); returns `output`. An `output` that is `spm_model_file` itself or a directory is refused."""
    if not tf.io.gfile.exists(spm_model_file):
        raise InputError(f"`spm_model_file` not found: `{spm_model_file}`.")
    if tf.io.gfile.isdir(output):
        raise InputError(f"`output={output}` is a directory; expected the path of the model file to write "
                         f"(such as `{os.path.join(output, 'raw-text.model')}`).")
    if _same_file(spm_model_file, output):
        raise InputError(f"`output={output}` is `spm_model_file` itself: writing there would replace the release's "
                         "model; pass another path.")
    with tf.io.gfile.GFile(spm_model_file, "rb") as f:
        proto = normalized_model(f.read(), do_lower_case, spm_model_file)
    write_bytes_atomic(output, proto)
    return output


def _same_file(a, b):
    """Whether paths `a` and `b` name one file (a link to it included)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


@dataclasses.dataclass(frozen=True, kw_only=True)
class NormalizeOptions(options_lib.TokenizerOptions):
    """`albert-normalize-spm`'s options: the release's SentencePiece model and casing (the shared tokenizer
    group), and the file to write."""

    output: str = option(help_text="The SentencePiece model to write: the release's with ALBERT's preprocessing "
                         "in its normalization rules.")


def normalize_spm(run):
    """The call of `albert-normalize-spm`: `write_normalized_model` of the `NormalizeOptions` `run`; prints the
    written path."""
    if not run.spm_model_file:
        raise InputError("`--spm_model_file` is required: the release's SentencePiece model (30k-clean.model).")
    print(write_normalized_model(run.spm_model_file, run.output, run.do_lower_case), flush=True)
