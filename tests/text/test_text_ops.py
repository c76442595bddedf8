"""Tests of `albert_tf.text.ops`: in-graph tokenization equals the original's Python tokenization."""

import os
import random
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops for the reloaded SavedModel)

from albert_tf.text import ops as text_ops
from albert_tf.text import vocab as vocab_lib
import fixtures_text as ft

# Reference: the original's Python path `encode_ids(sp, preprocess_text(text, lower=...))`, written out.


def ref_preprocess_text(text, lower):
    out = unicodedata.normalize("NFKD", " ".join(text.strip().split()))
    out = "".join(c for c in out if not unicodedata.combining(c))
    return out.lower() if lower else out


def ref_encode_ids(sp, text):
    """The original's digit-comma rule under Python 3: digits re-encoded without "▁", keeping the "▁"
    SentencePiece adds in front of them, then ","."""
    pieces = []
    for piece in sp.EncodeAsPieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            pieces += sp.EncodeAsPieces(piece[:-1].replace("▁", "")) + [","]
        else:
            pieces.append(piece)
    return [sp.PieceToId(p) for p in pieces]


CORPUS = [
    "",
    "   ",
    "Hello World!",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2028line\u3000ideographic\x1cfile-sep\u2009thin\x85nel",
    "Café naïve résumé Ångström Ørsted façade coöperate",
    "e\u0301 a\u0300\u0327 combining marks \u0301\u0302 alone",
    "ﬁ ligature ² superscript ① circled Ⅻ roman ｆｕｌｌ width",
    "In 1990, the population was 1,000,000, up from 900,000, in 1980, x1990, 12,",
    "Numbers: 5,5, 2000,2010, 90, 0, 1, 100,",
    "Σίσυφος straße",
    "日本語のテキスト 中文 한국어",
    "emoji 😀 and symbols € £ – — “quotes” «guillemets»",
    "(parens) \"quotes\" - dash . dot",
    "THE POPULATION UP, The First One",
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("text_ops")
    corpus = ft.write_digit_comma_corpus(root / "corpus.txt", "σίσυφος ς σ straße ﬁ € £ – ( ) \" - . 日本語",
                                         extra_words=["café"])
    path = vocab_lib.train_sentencepiece([corpus], str(root / "m"), vocab_size=320, minloglevel=2,
                                         hard_vocab_limit=False, character_coverage=1.0)
    return dict(path=path, proto=open(path, "rb").read(), sp=spm.SentencePieceProcessor(model_file=path))


def _random_texts(n, seed=0):
    rng = random.Random(seed)
    palette = list("abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 ,,,.()\"-") + list(
        "\u00a0\u2028\u3000\t\u2009éöåñçﬁ²①\u0301\u0327€£–日本😀")
    words = ["1990,", "2000,", "1,000,", "the", "population", "x90,", "12,"]
    texts = []
    for _ in range(n):
        parts = [rng.choice(words) if rng.random() < 0.4 else "".join(rng.choice(palette) for _ in range(5))
                 for _ in range(rng.randint(0, 8))]
        texts.append(" ".join(parts))
    return texts


def test_ids_equal_the_python_tokenizer(model):
    sp = model["sp"]
    texts = CORPUS + _random_texts(300)
    for lower in (True, False):
        tok = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=lower)
        fn = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        eager = tok.tokenize(tf.constant(texts)).to_list()
        graph = fn(tf.constant(texts)).to_list()
        expected = [ref_encode_ids(sp, ref_preprocess_text(t, lower)) for t in texts]
        assert eager == expected
        assert graph == expected
    # The digit-comma rule fired.
    raw = [sp.EncodeAsIds(ref_preprocess_text(t, True)) for t in texts]
    assert raw != expected


# Bytes that are not UTF-8, by class: lone continuation bytes, cut multi-byte sequences, overlong encodings,
# encoded surrogates, code points above U+10FFFF, bytes that never start a sequence (0xc0, 0xc1, 0xf5-0xff).
INVALID_UTF8 = [
    b"caf\xe9 au lait", b"lone \x80 continuation \xbf", b"cut \xe2\x82", b"cut \xe2\x82 then text",
    b"cut emoji \xf0\x9f\x98", b"\xf0\x9f\x98x", b"overlong \xc0\xaf slash \xe0\x80\xaf", b"\xc1\xbf",
    b"surrogate \xed\xa0\x80 pair \xed\xb0\x80", b"above \xf4\x90\x80\x80 max", b"\xff\xfe 0xff 0xfe",
    b"\xf5\x80\x80\x80 \xf8\x88\x80\x80\x80", b"In 1990\xff, the", b"x\xc3\xc3\xa9y", b"\xef\xbb\xbfbom",
    b"\x80", b"\xe9",
]


def _random_bytes(n, seed=0):
    """Strings of valid characters, cut characters and stray bytes: every invalid class at random places."""
    rng = random.Random(seed)
    pieces = [b"a", b"Z", b" ", b"1990,", "é".encode(), "€".encode(), "😀".encode(), "ﬁ".encode()]
    pieces += [bytes([b]) for b in range(0x80, 0x100)]
    pieces += ["€".encode()[:2], "😀".encode()[:3], "😀".encode()[1:]]
    return [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))) for _ in range(n)]


def test_bytes_that_are_not_utf8_are_dropped_as_the_original_decodes_them(model):
    """serve_text's tokenizer on invalid UTF-8: the ids of the original's `convert_to_unicode` under Python 3
    (`bytes.decode("utf-8", "ignore")`), then `preprocess_text` and `encode_ids`; eager, graph, masks."""
    sp = model["sp"]
    texts = INVALID_UTF8 + _random_bytes(1000)
    assert all(t.decode("utf-8", "ignore").encode() != t for t in INVALID_UTF8 if not t.startswith(b"\xef"))
    decoded = [t.decode("utf-8", "ignore") for t in texts]
    got = text_ops.drop_invalid_utf8(tf.constant(texts)).numpy().tolist()
    assert [g.decode("utf-8") for g in got] == decoded   # byte for byte Python's "ignore"
    for lower in (True, False):
        tok = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=lower)
        fn = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        expected = [ref_encode_ids(sp, ref_preprocess_text(t, lower)) for t in decoded]
        assert tok.tokenize(tf.constant(texts)).to_list() == expected
        assert fn(tf.constant(texts)).to_list() == expected
    tok = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=True)
    masked = tok.tokenize_with_masks(tf.constant([b"[MA\xffSK] \x80caf\xe9 [mask]"]), 4).to_list()[0]
    assert masked == [4] + ref_encode_ids(sp, ref_preprocess_text(" caf ", True)) + [4]


def test_digit_comma_rule_on_number_text(tmp_path):
    """A 400-piece vocabulary of number-heavy text (`1,` and `▁75,`-like pieces): the issue's examples and
    300 generated lines tokenize in the graph as the original does under Python 3."""
    corpus = ft.write_number_corpus(tmp_path / "numbers.txt")
    path = vocab_lib.train_sentencepiece([corpus], str(tmp_path / "num"), vocab_size=400, minloglevel=2,
                                         hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=path)
    texts = ["founded in 1801, it is", "a total area of 21,218 square kilometres (1,680 km2), it"]
    texts += ft.number_lines(300, seed=7)
    tok = text_ops.AlbertTextTokenizer(open(path, "rb").read(), do_lower_case=True)
    fn = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    expected = [ref_encode_ids(sp, ref_preprocess_text(t, True)) for t in texts]
    assert fn(tf.constant(texts)).to_list() == expected
    assert tok.tokenize(tf.constant(texts)).to_list() == expected
    # Where the split piece has no ▁ ("1,"), its digits keep theirs: "▁" or "▁1" follows "0" in "1801,".
    first = [sp.IdToPiece(i) for i in expected[0]]
    assert sp.EncodeAsPieces(texts[0])[3:5] == ["0", "1,"]
    assert first[3:5] in (["0", "▁1"], ["0", "▁"])


def test_normalize_equals_preprocess_text(model):
    tok = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=True)
    texts = CORPUS + _random_texts(200, seed=1)
    got = [s.decode("utf-8") for s in tok.normalize(tf.constant(texts)).numpy()]
    assert got == [ref_preprocess_text(t, True) for t in texts]


def test_known_differences_from_python(model):
    """Where the in-graph path is not exact: Unicode versions.

    Python 3.11's `unicodedata` is Unicode 14.0; tensorflow-text's ICU normalisation is newer and
    `tf.strings.lower` older. Of the 1.1M code points, 158 normalise differently (measured): 40 capital
    letters new in Unicode 14 that `tf.strings.lower` leaves upper-case (5 of them in the BMP, listed
    here) and 118 code points unassigned in Unicode 14 that ICU decomposes. Context-dependent rules
    (final sigma) agree.
    """
    tok = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=True)
    bmp = [c for c in range(0x20, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = ["x" + chr(c) + "y" for c in bmp]
    graph = [s.decode("utf-8") for s in tok.normalize(tf.constant(texts)).numpy()]
    differ = [hex(c) for c, t, g in zip(bmp, texts, graph) if g != ref_preprocess_text(t, True)]
    assert differ == ["0x2c2f", "0xa7c0", "0xa7d0", "0xa7d6", "0xa7d8"]
    assert chr(0x2C2F).lower() != chr(0x2C2F)  # Python lower-cases GLAGOLITIC CAPITAL LETTER CAUDATE CHRIVI
    assert graph[bmp.index(0x2C2F)] == "x" + chr(0x2C2F) + "y"  # the graph does not
    # An unassigned code point in Unicode 14 that ICU decomposes (U+11383).
    python = ref_preprocess_text(chr(0x11383), True)
    assert tok.normalize(tf.constant([chr(0x11383)])).numpy()[0].decode("utf-8") != python
    # Final sigma: both lower-case by context.
    assert tok.normalize(tf.constant(["ΟΔΟΣ"])).numpy()[0].decode("utf-8") == ref_preprocess_text("ΟΔΟΣ", True)


def _ref_pack(a, b, max_seq_length, cls_id=2, sep_id=3):
    a, b = list(a), (None if b is None else list(b))
    if b is None:
        a = a[:max_seq_length - 2]
        tokens, segments = [cls_id] + a + [sep_id], [0] * (len(a) + 2)
    else:
        while len(a) + len(b) > max_seq_length - 3:  # the original `_truncate_seq_pair`
            if len(a) > len(b):
                a.pop()
            else:
                b.pop()
        tokens = [cls_id] + a + [sep_id] + b + [sep_id]
        segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    pad = max_seq_length - len(tokens)
    return tokens + [0] * pad, [1] * len(tokens) + [0] * pad, segments + [0] * pad


def test_pack_inputs_truncates_like_the_original():
    rng = np.random.default_rng(0)
    for max_seq_length in (8, 9, 16):
        lengths = [(int(rng.integers(0, 20)), int(rng.integers(0, 20))) for _ in range(60)]
        lengths += [(5, 5), (4, 5), (5, 4), (0, 0), (0, 9), (9, 0)]
        a = [list(rng.integers(5, 100, n)) for n, _ in lengths]
        b = [list(rng.integers(5, 100, m)) for _, m in lengths]
        for second in (False, True):
            packed = text_ops.pack_inputs(tf.ragged.constant(a, dtype=tf.int32),
                                          tf.ragged.constant(b, dtype=tf.int32) if second else None,
                                          max_seq_length=max_seq_length)
            for row, (x, y) in enumerate(zip(a, b)):
                ids, mask, seg = _ref_pack(x, y if second else None, max_seq_length)
                assert packed["input_ids"][row].numpy().tolist() == ids
                assert packed["input_mask"][row].numpy().tolist() == mask
                assert packed["segment_ids"][row].numpy().tolist() == seg
            assert packed["input_ids"].dtype == tf.int32


def test_saved_model_signature_round_trip(model, tmp_path):
    module = tf.Module()
    module.tokenizer = text_ops.AlbertTextTokenizer(model["proto"], do_lower_case=True)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(text):
        ids = module.tokenizer.tokenize(text)
        return text_ops.pack_inputs(ids, None, max_seq_length=16)

    module.serve = serve
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": serve})
    loaded = tf.saved_model.load(str(tmp_path))
    texts = ["In 1990, Café naïve", "x90, 12, the"]
    out = loaded.signatures["serving_default"](text=tf.constant(texts))
    for row, text in enumerate(texts):
        ids = ref_encode_ids(model["sp"], ref_preprocess_text(text, True))
        assert out["input_ids"][row].numpy().tolist() == _ref_pack(ids, None, 16)[0]


def test_whitespace_class_covers_python_whitespace():
    assert max(c for c in range(0x110000) if chr(c).isspace()) < 0x3100  # the range text_ops scans


def test_missing_tensorflow_text_is_a_clear_error(model):
    # `sys.modules[name] = None` makes `import name` fail as if the package were not installed.
    code = ("import sys; sys.modules['tensorflow_text'] = None\n"
            "import tensorflow as tf\n"
            "from albert_tf.export import saved_model\nfrom albert_tf.text import ops as text_ops\n"
            "packed = text_ops.pack_inputs(tf.ragged.constant([[5, 6]]), None, max_seq_length=4)\n"
            "assert packed['input_ids'].numpy().tolist() == [[2, 5, 6, 3]]\n"
            "try:\n"
            f"    text_ops.AlbertTextTokenizer(open({model['path']!r}, 'rb').read())\n"
            "except ImportError as e:\n"
            "    print('ERROR:', e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ERROR:" in result.stdout and "`tensorflow-text`" in result.stdout
    major, minor = tf.__version__.split(".")[:2]  # the tensorflow-text that fits this TensorFlow
    assert f"pip install tensorflow-text~={major}.{minor}.0" in result.stdout
