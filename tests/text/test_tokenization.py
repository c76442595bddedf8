"""Tests of `albert_tf.text.tokenization` and `albert_tf.text.vocab` against a transcription of the original
`tokenization.py` (as it runs under Python 3)."""

import gzip
import json
import os
import random
import subprocess
import sys
import unicodedata

import pytest
import sentencepiece as spm

from albert_tf.text import tokenization
from albert_tf.text import vocab as vocab_lib
import fixtures_text as ft
import repo_paths

# ------------------------------------------------------------------------------------------------
# Independent transcription of the original's behaviour (written from its rules, not from the package code).


def ref_preprocess_text(inputs, remove_space=True, lower=False):
    outputs = " ".join(inputs.strip().split()) if remove_space else inputs
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    return outputs.lower() if lower else outputs


def ref_encode_pieces(sp, text):
    """The original's digit-comma rule under Python 3: a piece ending in <digit>"," is replaced by the pieces
    of its digits (its "▁" removed before re-encoding) and ","; the "▁" SentencePiece puts in front of the
    re-encoded digits stays (the original's strip compares with a bytes constant and never fires)."""
    out = []
    for piece in sp.EncodeAsPieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            out += sp.EncodeAsPieces(piece[:-1].replace("▁", "")) + [","]
        else:
            out.append(piece)
    return out


def python2_reading(sp, text):
    """What tf-models-official and transformers do (the Python 2 reading): strip that leading "▁"."""
    out = []
    for piece in sp.EncodeAsPieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur = sp.EncodeAsPieces(piece[:-1].replace("▁", ""))
            if not piece.startswith("▁") and cur[0].startswith("▁"):
                cur = cur[1:] if cur[0] == "▁" else [cur[0][1:]] + cur[1:]
            out += cur + [","]
        else:
            out.append(piece)
    return out


ISSUE_TEXTS = ["founded in 1801, it is", "a total area of 21,218 square kilometres (1,680 km2), it"]


TEXTS = [
    "",
    "   ",
    "Hello World!",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2028line\u3000ideographic\x1cfile-sep\u2009thin",
    "Café naïve résumé Ångström Ørsted façade coöperate",
    "e\u0301 a\u0300\u0327 combining marks only \u0301\u0302",
    "ﬁ ligature ² superscript ① circled Ⅻ roman ｆｕｌｌ width",
    "In 1990, the population was 1,000,000, up from 900,000, in 1980, x1990, 12,",
    "Numbers: 5,5, 2000,2010, 90, 0, 1,",
    "ΟΔΟΣ Σίσυφος İstanbul straße",
    "日本語のテキスト 中文 한국어",
    "emoji 😀 and symbols € £ – — “quotes” «guillemets»",
    "(parens) \"quotes\" - dash . dot",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A model whose vocabulary has digit-comma pieces (`▁1990,` and unmarked ones like `90,`)."""
    root = tmp_path_factory.mktemp("tok")
    corpus = ft.write_digit_comma_corpus(root / "corpus.txt", "Café naïve résumé ΟΔΟΣ € £ – ( ) \" - .")
    model = vocab_lib.train_sentencepiece([corpus], str(root / "dc"), vocab_size=300, minloglevel=2,
                                          hard_vocab_limit=False)
    return dict(root=root, corpus=corpus, model=model)


def _dc_pieces(sp):
    return [p for p in (sp.IdToPiece(i) for i in range(sp.GetPieceSize()))
            if len(p) > 1 and p[-1] == "," and p[-2].isdigit()]


def test_vocabulary_has_the_original_special_ids(models):
    sp = spm.SentencePieceProcessor(model_file=models["model"])
    pieces = [sp.IdToPiece(i) for i in range(13)]
    assert pieces == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "(", ")", '"', "-", ".", "–", "£", "€"]
    assert os.path.exists(models["model"][:-len(".model")] + ".vocab")
    assert not [f for f in os.listdir(models["root"]) if ".tmp" in f]


def test_preprocess_text_matches_the_spec():
    for text in TEXTS:
        for lower in (False, True):
            assert tokenization.preprocess_text(text, lower=lower) == ref_preprocess_text(text, lower=lower)
            assert tokenization.fast_preprocess_text(text, lower=lower) == ref_preprocess_text(text, lower=lower)
        assert tokenization.preprocess_text(text, remove_space=False) == ref_preprocess_text(text, remove_space=False)


def test_fast_preprocess_text_on_random_unicode():
    rng = random.Random(3)
    palette = [chr(c) for c in range(0x20, 0x250)] + [chr(c) for c in range(0x300, 0x370)] + list(
        "\u00a0\u2028\u3000\t\n\x1c\u2009ﬁ²①ΣςσİĲ가각\u0e31\u0f71\u1dc0\u20d0\ufe20😀\U0001d15e")
    for _ in range(2000):
        text = "".join(rng.choice(palette) for _ in range(rng.randint(0, 30)))
        for lower in (False, True):
            assert tokenization.fast_preprocess_text(text, lower=lower) == ref_preprocess_text(text, lower=lower)


def test_combining_table_scan_covers_all_of_unicode():
    assert tokenization.combining_code_point_ranges() == tokenization.combining_code_point_ranges(0x110000)


def test_encode_pieces_and_ids_match_the_spec(models):
    sp = spm.SentencePieceProcessor(model_file=models["model"])
    tok = tokenization.FullTokenizer(spm_model_file=models["model"])
    assert len(_dc_pieces(sp)) > 5 and any(not p.startswith("▁") for p in _dc_pieces(sp))
    fired = unmarked = 0
    for text in TEXTS:
        for lower in (False, True):
            clean = ref_preprocess_text(text, lower=lower)
            expected = ref_encode_pieces(sp, clean)
            assert tokenization.encode_pieces(sp, clean) == expected
            assert tok.tokenize(clean) == expected
            ids = [sp.PieceToId(p) for p in expected]
            assert tokenization.encode_ids(sp, clean) == ids
            assert tok.convert_tokens_to_ids(expected) == ids
            assert tok.convert_ids_to_tokens(ids) == [sp.IdToPiece(i) for i in ids]
            raw = sp.EncodeAsPieces(clean)
            fired += raw != expected
            unmarked += any(not p.startswith("▁") and len(p) > 1 and p[-1] == "," and p[-2].isdigit()
                            for p in raw)
    assert fired and unmarked  # digit-comma pieces with and without a leading ▁ were split


@pytest.fixture(scope="module")
def number_model(tmp_path_factory):
    """A 400-piece model of number-heavy text: it has `1,`, `0,` ... (no ▁) and `▁75,` ... pieces."""
    root = tmp_path_factory.mktemp("numbers")
    corpus = ft.write_number_corpus(root / "numbers.txt")
    path = vocab_lib.train_sentencepiece([corpus], str(root / "num"), vocab_size=400, minloglevel=2,
                                         hard_vocab_limit=False)
    return spm.SentencePieceProcessor(model_file=path), path


def test_digit_comma_rule_keeps_the_underline_as_the_original_under_python3(number_model):
    sp, path = number_model
    tok = tokenization.FullTokenizer(spm_model_file=path)
    texts = ISSUE_TEXTS + ft.number_lines(300, seed=7)
    differs_from_python2 = 0
    for text in texts:
        for lower in (False, True):
            clean = ref_preprocess_text(text, lower=lower)
            expected = ref_encode_pieces(sp, clean)
            assert tokenization.encode_pieces(sp, clean) == expected
            assert tok.tokenize(clean) == expected
            assert tokenization.encode_ids(sp, clean) == [sp.PieceToId(p) for p in expected]
            assert tok.convert_tokens_to_ids(tok.tokenize(clean)) == [sp.PieceToId(p) for p in expected]
            differs_from_python2 += expected != python2_reading(sp, clean)
    assert differs_from_python2 > 100
    # The issue's examples: a digit-comma piece without ▁ ("1,") is split into "▁", "1", "," (or "▁1", ","),
    # so a "▁"-initial piece follows the year's other pieces where the Python 2 reading has a bare "1".
    for text in ISSUE_TEXTS:
        raw = sp.EncodeAsPieces(text)
        unmarked = [i for i, p in enumerate(raw) if p[-1:] == "," and p[-2:-1].isdigit() and p[0] != "▁"]
        assert unmarked, raw
        pieces = tokenization.encode_pieces(sp, text)
        position = 0
        for i, piece in enumerate(raw):
            if i in unmarked:
                digits = sp.EncodeAsPieces(piece[:-1])
                assert digits[0].startswith("▁")
                assert pieces[position:position + len(digits) + 1] == digits + [","]
                position += len(digits) + 1
            elif tokenization.is_digit_comma_piece(piece):
                position += len(sp.EncodeAsPieces(piece[1:-1])) + 1
            else:
                assert pieces[position] == piece
                position += 1
        assert position == len(pieces)
        assert pieces != python2_reading(sp, text)


def test_sampled_encoding_splits_digit_commas_without_sampling(number_model):
    sp, _ = number_model
    for seed in range(20):
        spm.set_random_generator_seed(seed)
        pieces = tokenization.encode_pieces(sp, ISSUE_TEXTS[1], sample=True)
        assert "".join(pieces).replace("▁", "") == ISSUE_TEXTS[1].replace(" ", "")
        assert not any(tokenization.is_digit_comma_piece(p) for p in pieces)


def test_full_tokenizer_spm_does_not_lower_case(models):
    tok = tokenization.FullTokenizer(spm_model_file=models["model"], do_lower_case=True)
    sp = tok.sp_model
    assert tok.tokenize("THE Population") == ref_encode_pieces(sp, "THE Population")
    assert tok.tokenize("THE Population") != tok.tokenize("the population")
    assert len(tok.vocab) == sp.GetPieceSize() and tok.vocab["[MASK]"] == 4
    assert tok.sp_model_proto == open(models["model"], "rb").read()


def test_wordpiece_vocab_and_tokenizer(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nwant 12\n##want\n##ed\nwa\nun\nrunn\n##ing\n,\nwant\n\na\n##a\n",
                          encoding="utf-8")
    vocab = tokenization.load_vocab(str(vocab_file))
    # First field only; a duplicate keeps its first id; a blank line is the token " ".
    assert vocab["want"] == 4 and vocab["##a"] == 14 and vocab[" "] == 12 and len(vocab) == 15
    tok = tokenization.FullTokenizer(vocab_file=str(vocab_file), do_lower_case=True)
    assert tok.tokenize("UNwant\u00e9d,running") == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tok.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert tok.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["[UNK]"] * 6
    assert tok.basic_tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
    assert tok.tokenize("a" * 200) == ["a"] + ["##a"] * 199  # the original's 200-character limit
    assert tok.tokenize("a" * 201) == ["[UNK]"]
    assert tok.convert_tokens_to_ids(["un", "##want"]) == [8, 5]
    assert tok.convert_ids_to_tokens([8, 5]) == ["un", "##want"]
    cased = tokenization.FullTokenizer(vocab_file=str(vocab_file), do_lower_case=False)
    assert cased.tokenize("UNwant") == ["[UNK]"]
    with pytest.raises(ValueError, match="spm_model_file"):
        tokenization.FullTokenizer()


def test_train_sentencepiece_rejects_symbols_as_a_string(models, tmp_path):
    with pytest.raises(TypeError, match="user_defined_symbols"):
        vocab_lib.train_sentencepiece([models["corpus"]], str(tmp_path / "x"), vocab_size=100,
                                      user_defined_symbols='(,),",-,.,–,£,€')
    with pytest.raises(ValueError, match="does not exist"):
        vocab_lib.train_sentencepiece([str(tmp_path / "missing.txt")], str(tmp_path / "x"), vocab_size=100)
    # The command line splits on commas only, so the README's list gives its eight symbols.
    assert vocab_lib.split_symbols('(,),",-,.,–,£,€') == list(vocab_lib.USER_DEFINED_SYMBOLS)


@pytest.mark.e2e
def test_train_vocab_command_line(models, tmp_path):
    prefix = str(tmp_path / "cli")
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.commands", "albert-train-vocab", f"--input={models['corpus']}", f"--model_prefix={prefix}",
         "--vocab_size=120"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    assert sp.GetPieceSize() == 120
    assert [sp.IdToPiece(i) for i in range(13)][5:] == list(vocab_lib.USER_DEFINED_SYMBOLS)


def test_from_hub_module_uses_the_spm_asset(models, tmp_path):
    import shutil

    import tensorflow as tf

    module = tmp_path / "hub"
    (module / "assets").mkdir(parents=True)
    shutil.copy(models["model"], module / "assets" / "30k-clean.model")
    tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(module / "variables" / "variables"))
    tok = tokenization.FullTokenizer.from_hub_module(str(module))
    assert tok.sp_model_proto == open(models["model"], "rb").read()
    assert tok.tokenize("in 1990, the") == ref_encode_pieces(tok.sp_model, "in 1990, the")
    with pytest.raises(ValueError, match="vocab file"):
        tokenization.FullTokenizer.from_hub_module(str(module), use_spm=False)


BYTES_TEXT = b"caf\xc3\xa9 \xff bytes"


def wordpiece_inputs():
    """500 random texts over a palette of the hard cases, and a small WordPiece vocabulary."""
    rng = random.Random(5)
    palette = list("abcXYZ éÉñ日本中文한국\t\n\r\u00a0\u2028\u3000\x00\ufffd\u200b\x7f,.!?^$`~#-'\"()") + [
        chr(c) for c in range(0x300, 0x310)] + ["\U00020001", "\U0002f800", "😀", "\u0e31"]
    texts = ["".join(rng.choice(palette) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    vocab = {t: i for i, t in enumerate(["[UNK]", "a", "b", "c", "##a", "##b", "##c", "ab", "x", "##y", "##z",
                                         "日", "本", "e", "##n", ",", "!"])}
    return texts, vocab


def test_wordpiece_path_matches_tf_models_copy_of_the_original():
    """tf-models-official's `tokenization.py` is a copy of the original's WordPiece path (its only change, a
    400-character word limit, is set back to the original's 200); its outputs on `wordpiece_inputs()` are stored
    by tests/references/make_tfm_references.py."""
    path = os.path.join(repo_paths.REFERENCES, "tfm_tokenization.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        ref = json.load(f)
    texts, vocab = wordpiece_inputs()
    assert (ref["texts"], ref["vocab"]) == (texts, vocab), "the inputs changed: regenerate the references"
    for lower in (True, False):
        ours, wp_ours = tokenization.BasicTokenizer(lower), tokenization.WordpieceTokenizer(vocab)
        for text, basic_ref, wp_ref in zip(texts, ref[f"basic_lower={lower}"], ref[f"wordpiece_lower={lower}"]):
            basic = ours.tokenize(text)
            assert basic == basic_ref
            assert ours.tokenize(text.encode("utf-8")) == basic
            assert wp_ours.tokenize(" ".join(basic)) == wp_ref
    for i, text in enumerate(texts + [BYTES_TEXT]):
        assert tokenization.convert_to_unicode(text) == ref["convert_to_unicode"][i]
        assert tokenization.printable_text(text) == ref["printable_text"][i]
        assert tokenization.whitespace_tokenize(tokenization.convert_to_unicode(text)) == ref["whitespace_tokenize"][i]
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(3)


def test_tokenization_does_not_import_tf_models(tmp_path):
    code = ("import sys, albert_tf.text.tokenization, albert_tf.text.ops, albert_tf.export.saved_model; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('official', 'tf_keras', 'tensorflow_text')); "
            "assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]


def test_task_features_follow_the_digit_comma_rule(number_model):
    """GLUE, RACE and SQuAD features carry the original's ids on number text (their reference is the rule
    above applied to the processed text, packed as the original scripts do)."""
    from albert_tf.tasks.glue import data as glue
    from albert_tf.tasks.race import data as race
    from albert_tf.tasks.squad import data as squad  # Deferred: only this test needs the task modules.

    sp, path = number_model
    tok = tokenization.FullTokenizer(spm_model_file=path, do_lower_case=True)
    lines = ISSUE_TEXTS + ft.number_lines(60, seed=11)

    def ref_ids(text):
        return [sp.PieceToId(p) for p in ref_encode_pieces(sp, ref_preprocess_text(text, lower=True))]

    processor = glue.get_processor("mrpc", use_spm=True, do_lower_case=True)
    for i in range(0, len(lines) - 1, 2):
        a, b = lines[i], lines[i + 1]
        example = glue.InputExample("g", processor.process_text(a), processor.process_text(b), "1")
        feature = glue.convert_single_example(9, example, ["0", "1"], 128, tok, "mrpc")
        ids_a, ids_b = ref_ids(a), ref_ids(b)
        assert len(ids_a) + len(ids_b) <= 125
        expected = [2] + ids_a + [3] + ids_b + [3]
        assert feature.input_ids == expected + [0] * (128 - len(expected))

    process = race.make_process_text(do_lower_case=True)
    context = " ".join(lines[:2])
    endings = [process(line) for line in lines[2:6]]
    example = race.RaceExample("a-0", "a", 0, "high", process(context), endings, 0, "t.json")
    ids, _, _, _ = race.encode_example(example, tok, max_seq_length=128, max_qa_length=40)
    for row, ending in zip(ids, lines[2:6]):
        expected = [2] + ref_ids(context) + [3] + ref_ids(ending)[-40:] + [3]
        assert len(expected) <= 128 and row == expected + [0] * (128 - len(expected))

    paragraph = "The town was founded in 1801, it is a total area of 21,218 square kilometres (1,680 km2), it"
    question = "In 1801, what was founded?"
    example = squad.SquadExample("q1", question, paragraph, "1801", paragraph.index("1801"), None, False)
    features = []
    squad.convert_examples_to_features([example], tok, max_seq_length=96, doc_stride=32, max_query_length=24,
                                       is_training=True, output_fn=features.append, do_lower_case=True)
    (feature,) = features
    query, doc = ref_ids(question), ref_ids(paragraph)
    assert feature.input_ids[:len(query) + len(doc) + 3] == [2] + query + [3] + doc + [3]
    answer = feature.input_ids[feature.start_position:feature.end_position + 1]
    assert "".join(sp.IdToPiece(i) for i in answer).replace("▁", "") == "1801"
