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
# Adapted from google-research/ALBERT/tokenization_test.py. Changes: it imports `albert_tf.text.tokenization` in
# place of `albert.tokenization`; the `six` and Python 2 branches are gone (the vocabulary file is written as
# UTF-8 bytes, as the original's Python 3 branch does); `tf.test.TestCase` comes from `tensorflow` rather than
# `tensorflow.compat.v1`; the assertions of `TokenizationTest` are the original's, unchanged. The class
# `OriginalApiTest` at the end is added: it checks the rest of the original module's API (the module-level
# functions, the SentencePiece path on a model trained in the test, `FullTokenizer.from_scratch`,
# `SPIECE_UNDERLINE` as bytes) and `validate_case_matches_checkpoint`, BERT's function of that name.
"""The original release's tokenization tests, run against `albert_tf.text.tokenization`."""

import os
import tempfile

import sentencepiece as spm
import tensorflow as tf

from albert_tf.text import tokenization


class TokenizationTest(tf.test.TestCase):

    def test_full_tokenizer(self):
        vocab_tokens = [
            "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
            "##ing", ","
        ]
        with tempfile.NamedTemporaryFile(delete=False) as vocab_writer:
            contents = "".join([x + "\n" for x in vocab_tokens])
            vocab_writer.write(contents.encode("utf-8"))

            vocab_file = vocab_writer.name

        tokenizer = tokenization.FullTokenizer(vocab_file)
        os.unlink(vocab_file)

        tokens = tokenizer.tokenize(u"UNwant\u00E9d,running")
        self.assertAllEqual(tokens, ["un", "##want", "##ed", ",", "runn", "##ing"])

        self.assertAllEqual(
            tokenizer.convert_tokens_to_ids(tokens), [7, 4, 5, 10, 8, 9])

    def test_chinese(self):
        tokenizer = tokenization.BasicTokenizer()

        self.assertAllEqual(
            tokenizer.tokenize(u"ah\u535A\u63A8zz"),
            [u"ah", u"\u535A", u"\u63A8", u"zz"])

    def test_basic_tokenizer_lower(self):
        tokenizer = tokenization.BasicTokenizer(do_lower_case=True)

        self.assertAllEqual(
            tokenizer.tokenize(u" \tHeLLo!how  \n Are yoU?  "),
            ["hello", "!", "how", "are", "you", "?"])
        self.assertAllEqual(tokenizer.tokenize(u"H\u00E9llo"), ["hello"])

    def test_basic_tokenizer_no_lower(self):
        tokenizer = tokenization.BasicTokenizer(do_lower_case=False)

        self.assertAllEqual(
            tokenizer.tokenize(u" \tHeLLo!how  \n Are yoU?  "),
            ["HeLLo", "!", "how", "Are", "yoU", "?"])

    def test_wordpiece_tokenizer(self):
        vocab_tokens = [
            "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
            "##ing"
        ]

        vocab = {}
        for (i, token) in enumerate(vocab_tokens):
            vocab[token] = i
        tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)

        self.assertAllEqual(tokenizer.tokenize(""), [])

        self.assertAllEqual(
            tokenizer.tokenize("unwanted running"),
            ["un", "##want", "##ed", "runn", "##ing"])

        self.assertAllEqual(
            tokenizer.tokenize("unwantedX running"), ["[UNK]", "runn", "##ing"])

    def test_convert_tokens_to_ids(self):
        vocab_tokens = [
            "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
            "##ing"
        ]

        vocab = {}
        for (i, token) in enumerate(vocab_tokens):
            vocab[token] = i

        self.assertAllEqual(
            tokenization.convert_tokens_to_ids(
                vocab, ["un", "##want", "##ed", "runn", "##ing"]), [7, 4, 5, 8, 9])

    def test_is_whitespace(self):
        self.assertTrue(tokenization._is_whitespace(u" "))
        self.assertTrue(tokenization._is_whitespace(u"\t"))
        self.assertTrue(tokenization._is_whitespace(u"\r"))
        self.assertTrue(tokenization._is_whitespace(u"\n"))
        self.assertTrue(tokenization._is_whitespace(u"\u00A0"))

        self.assertFalse(tokenization._is_whitespace(u"A"))
        self.assertFalse(tokenization._is_whitespace(u"-"))

    def test_is_control(self):
        self.assertTrue(tokenization._is_control(u"\u0005"))

        self.assertFalse(tokenization._is_control(u"A"))
        self.assertFalse(tokenization._is_control(u" "))
        self.assertFalse(tokenization._is_control(u"\t"))
        self.assertFalse(tokenization._is_control(u"\r"))
        self.assertFalse(tokenization._is_control(u"\U0001F4A9"))

    def test_is_punctuation(self):
        self.assertTrue(tokenization._is_punctuation(u"-"))
        self.assertTrue(tokenization._is_punctuation(u"$"))
        self.assertTrue(tokenization._is_punctuation(u"`"))
        self.assertTrue(tokenization._is_punctuation(u"."))

        self.assertFalse(tokenization._is_punctuation(u"A"))
        self.assertFalse(tokenization._is_punctuation(u" "))


# --- Added: the rest of the original module's API (not in the original test file). -----------------------------

_SPM_LINES = ["the cat sat on the mat.", "a dog ran in the park with the cat.", "the park is green and wide.",
              "dogs and cats play in the park every day."]


class OriginalApiTest(tf.test.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp()
        corpus = os.path.join(cls.tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(_SPM_LINES * 20) + "\n")
        prefix = os.path.join(cls.tmp, "spm")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, vocab_size=60, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
            control_symbols=["[CLS]", "[SEP]", "[MASK]"], model_type="unigram", hard_vocab_limit=False,
            num_threads=1, minloglevel=2)
        cls.spm_file = prefix + ".model"
        cls.sp = spm.SentencePieceProcessor(model_file=cls.spm_file)

    def test_module_functions_on_a_wordpiece_vocab(self):
        vocab_file = os.path.join(self.tmp, "vocab.txt")
        with open(vocab_file, "wb") as f:
            f.write("[UNK]\n[CLS]\nwant 12\n##ed\n\nwant\nnaïve\n".encode("utf-8"))
        vocab = tokenization.load_vocab(vocab_file)
        # The first field of each line; a blank line is " "; a repeated token keeps its first id.
        self.assertEqual(list(vocab.items()),
                         [("[UNK]", 0), ("[CLS]", 1), ("want", 2), ("##ed", 3), (" ", 4), ("naïve", 5)])
        inv_vocab = {v: k for k, v in vocab.items()}
        self.assertEqual(tokenization.convert_ids_to_tokens(inv_vocab, [2, 3, 5]), ["want", "##ed", "naïve"])
        self.assertEqual(tokenization.convert_by_vocab(vocab, ["##ed", "[CLS]"]), [3, 1])
        with self.assertRaises(KeyError):
            tokenization.convert_tokens_to_ids(vocab, ["missing"])
        self.assertEqual(tokenization.whitespace_tokenize("  a\tb \n c  "), ["a", "b", "c"])
        self.assertEqual(tokenization.whitespace_tokenize(" \n "), [])

    def test_unicode_conversions(self):
        self.assertEqual(tokenization.convert_to_unicode("na\u00efve"), "na\u00efve")
        self.assertEqual(tokenization.convert_to_unicode(b"na\xc3\xafve"), "na\u00efve")
        self.assertEqual(tokenization.convert_to_unicode(b"a\xffb"), "ab")   # invalid UTF-8 is dropped
        self.assertEqual(tokenization.printable_text(b"caf\xc3\xa9"), "caf\u00e9")
        for function in (tokenization.convert_to_unicode, tokenization.printable_text):
            with self.assertRaises(ValueError):
                function(3)

    def test_preprocess_text(self):
        self.assertEqual(tokenization.preprocess_text("  Caf\u00e9  au\tLAIT ", lower=True), "cafe au lait")
        self.assertEqual(tokenization.preprocess_text("Caf\u00e9", lower=False), "Cafe")
        self.assertEqual(tokenization.preprocess_text(" a  b ", remove_space=False), " a  b ")
        self.assertEqual(tokenization.preprocess_text("\ufb01ne"), "fine")   # NFKD: the ligature fi

    def test_sentencepiece_path_is_sentencepiece_without_digit_commas(self):
        text = "the dog and the cat play in the green park."
        pieces = self.sp.EncodeAsPieces(text)
        self.assertEqual(tokenization.encode_pieces(self.sp, text), pieces)
        self.assertEqual(tokenization.encode_ids(self.sp, text), [self.sp.PieceToId(p) for p in pieces])
        tokenizer = tokenization.FullTokenizer(vocab_file=None, do_lower_case=True, spm_model_file=self.spm_file)
        self.assertEqual(tokenizer.tokenize(text), pieces)
        ids = tokenizer.convert_tokens_to_ids(pieces)
        self.assertEqual(ids, self.sp.EncodeAsIds(text))
        self.assertEqual(tokenizer.convert_ids_to_tokens(ids), pieces)
        self.assertEqual(tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "no-such-piece"]), [2, 3, 1])
        self.assertEqual(len(tokenizer.vocab), self.sp.GetPieceSize())
        self.assertEqual(tokenizer.inv_vocab[4], "[MASK]")

    def test_from_scratch_and_the_underline_constant(self):
        tokenizer = tokenization.FullTokenizer.from_scratch(None, True, self.spm_file)
        self.assertEqual(tokenizer.tokenize("the cat"), self.sp.EncodeAsPieces("the cat"))
        # The original's callers (squad_utils.py) write `SPIECE_UNDERLINE.decode("utf-8")`.
        self.assertEqual(tokenization.SPIECE_UNDERLINE, b"\xe2\x96\x81")
        self.assertEqual(tokenization.SPIECE_UNDERLINE.decode("utf-8"), "\u2581")

    def test_validate_case_matches_checkpoint(self):
        for checkpoint in ("albert_base/model.ckpt-best", "/data/albert_xxlarge_v2/model.ckpt-best.index",
                           "albert_base_v2.tar.gz", "albert_large_zh", "albert_en_base/"):
            with self.subTest(checkpoint=checkpoint):
                with self.assertRaisesRegex(ValueError, "do_lower_case"):
                    tokenization.validate_case_matches_checkpoint(False, checkpoint)
                tokenization.validate_case_matches_checkpoint(True, checkpoint)
        for checkpoint in (None, "", "out_mnli/model.ckpt-best", "my_cased_model/model.ckpt-100"):
            with self.subTest(checkpoint=checkpoint):
                tokenization.validate_case_matches_checkpoint(False, checkpoint)


if __name__ == "__main__":
    tf.test.main()
