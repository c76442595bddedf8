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
# `original_preprocess_text` and `original_ids` are adapted from google-research/ALBERT/tokenization.py
# (`preprocess_text`, `encode_pieces`, `encode_ids`). Changes: Python 3 only (the `six` branches are gone; the
# digit-comma branch's bytes comparisons written out as they evaluate under Python 3); `original_ids` also
# returns whether the digit-comma rule fired. The corpus builder above them is new.
"""A large mixed corpus for the normalization tests, and the original tokenizer written out as the reference.

The corpus is the English text CPython ships (`pydoc_data.topics`, the help topics) and variants of it drawn
with a fixed seed: upper-case, title-case and mixed-case lines; accented letters, precomposed and as
combining marks; Greek, Cyrillic, fullwidth and mathematical letters in place of Latin ones; typographic and
LaTeX-style quotes; runs of tabs and of Unicode spaces; ligatures, CJK, kana with voicing marks, Hangul
(precomposed and as jamo), Devanagari and Bengali two-part vowels; numbers with commas (`1,990,`).
"""

import random
import unicodedata

import pydoc_data.topics

SPIECE_UNDERLINE = "▁"
ACCENTS = "\u0301\u0300\u0302\u0308\u0303\u0327\u030c\u0328"
PRECOMPOSED = "éèêëáàâäíìîïóòôöúùûüçñÉÈÀÇÑŒœßøÅåŁł"
QUOTES = ("\u201c", "\u201d", "\u2018", "\u2019", "\u00ab", "\u00bb", "\u201e", "``", "''", "'''", '"', "`")
SPACES = ("\t", "  ", "\u00a0", "\u2003", "\u3000", "\u2009", " \t ", "\u200b", "\u202f", "\u2028")
GREEK = dict(zip("abgdezhiklmnxoprstufcyw", "αβγδεζηικλμνξοπρστυφχψω"))
CYRILLIC = dict(zip("abvgdezijklmnoprstufhc", "абвгдезийклмнопрстуфхц"))
EXTRA_WORDS = ("ﬁnal", "ﬂow", "Ⅻ", "①", "x²", "½", "東京大学", "日本語テキスト", "がぎぐげご", "パピプ", "한국어 문장",
               "\u1112\u1161\u11ab\u1100\u1173\u11af", "हिन्दी", "বাংলা কোথায়", "ᾅ", "ǅemal", "ＡＢＣ ｆｕｌｌ", "𝐀𝐁𝐂",
               "Ωmega", "ΟΔΟΣ ΣΟΦΟΣ", "İstanbul", "K\u212a", "£5", "€10", "\u00e9t\u00e9", "cafe\u0301", "na\u00efve")


def _sentences():
    lines = []
    for text in pydoc_data.topics.topics.values():
        for line in text.splitlines():
            line = line.strip()
            if 20 <= len(line) <= 200:
                lines.append(line)
    return lines


def _accent(rng, word):
    chars = []
    for char in word:
        chars.append(char)
        if char.isalpha() and rng.random() < 0.15:
            chars.append(rng.choice(ACCENTS))
    return "".join(chars)


def _script(rng, word):
    table = rng.choice((GREEK, CYRILLIC, None))
    if table is None:  # fullwidth letters (NFKD folds them to ASCII)
        return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in word)
    return "".join(table.get(c, c) for c in word)


def _variant(rng, line):
    words = line.split(" ")
    out = []
    for word in words:
        r = rng.random()
        if r < 0.08:
            word = _accent(rng, word)
        elif r < 0.12:
            word = _script(rng, word.lower())
        elif r < 0.16:
            word = rng.choice(QUOTES) + word + rng.choice(QUOTES)
        elif r < 0.19:
            word = rng.choice(PRECOMPOSED) + word
        elif r < 0.21:
            word = rng.choice(EXTRA_WORDS)
        elif r < 0.23:
            word = f"{rng.randint(1, 2024)}," if rng.random() < 0.5 else f"{rng.randint(1, 99)},{rng.randint(0, 999):03d}"
        out.append(word)
        out.append(rng.choice(SPACES) if rng.random() < 0.1 else " ")
    text = "".join(out[:-1])
    casing = rng.random()
    if casing < 0.15:
        text = text.upper()
    elif casing < 0.25:
        text = text.title()
    elif casing < 0.3:
        text = text.swapcase()
    if rng.random() < 0.1:
        text = rng.choice(SPACES) + text + rng.choice(SPACES)
    return text


def mixed_corpus(num_lines=6000, seed=0):
    """`num_lines` lines: CPython's help text and its variants (see the module docstring), half of each."""
    rng = random.Random(seed)
    sentences = _sentences()
    rng.shuffle(sentences)
    lines = []
    for index in range(num_lines):
        line = sentences[index % len(sentences)]
        lines.append(line if index % 2 == 0 else _variant(rng, line))
    return lines


# --- The original tokenizer, written out from google-research/ALBERT/tokenization.py --------------------------
# `preprocess_text` and `encode_pieces` as they run under Python 3: the digit-comma branch compares the str
# pieces with the bytes constant `SPIECE_UNDERLINE`, so it never drops a leading "▁".


def original_preprocess_text(inputs, lower):
    outputs = " ".join(inputs.strip().split())
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join([c for c in outputs if not unicodedata.combining(c)])
    if lower:
        outputs = outputs.lower()
    return outputs


def digit_comma_fires(piece):
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def original_ids(sp_model, text, lower):
    """`(ids, fired)`: the original's ids of raw `text` and whether its digit-comma rule split a piece."""
    pieces = sp_model.EncodeAsPieces(original_preprocess_text(text, lower))
    new_pieces = []
    fired = False
    for piece in pieces:
        if digit_comma_fires(piece):
            fired = True
            cur_pieces = sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
            cur_pieces.append(piece[-1])
            new_pieces.extend(cur_pieces)
        else:
            new_pieces.append(piece)
    return [sp_model.PieceToId(piece) for piece in new_pieces], fired


def final_sigma_fires(text):
    """Whether Python's lower-casing of `text` writes a capital sigma as the final form `ς` (context-dependent)."""
    return text.lower().count("ς") > text.count("ς")
