"""Shared text fixtures of the tokenizer tests: a corpus whose SentencePiece vocabulary has digit-comma pieces."""

import random

# Common English words; the numbers with trailing commas make pieces like `▁1990,` and `90,` (the original `encode_pieces` digit-comma rule).
DIGIT_COMMA_WORDS = ("the of and in to a was is for on as by with he at from his an were are which this also be "
                     "has or had first one their its new after who they population up").split()


def write_digit_comma_corpus(path, last_line, extra_words=(), num_lines=3000, seed=0):
    """Writes `num_lines` random lines of words and `<number>,` tokens, then `last_line`, to `path`.

    Args:
        path: `pathlib.Path` of the corpus file (UTF-8).
        last_line: str, a final line with the characters the test needs in the vocabulary.
        extra_words: words added to `DIGIT_COMMA_WORDS`.
        num_lines: int, random lines.
        seed: int, of the `random.Random` drawing the lines.

    Returns:
        str, `path`.
    """
    rng = random.Random(seed)
    words = DIGIT_COMMA_WORDS + list(extra_words)
    lines = []
    for _ in range(num_lines):
        tokens = []
        for _ in range(rng.randint(5, 15)):
            r = rng.random()
            if r < 0.2:
                tokens.append(f"{rng.choice([1990, 2000, 1985, 2010, 1, 12, 100])},")
            elif r < 0.25:
                tokens.append(f"{rng.randint(1, 9)},{rng.randint(100, 999)},")
            else:
                tokens.append(rng.choice(words))
        lines.append(" ".join(tokens))
    lines.append(last_line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def number_lines(num_lines, seed=0):
    """Random lines of words and numbers written as in encyclopaedic text ("1801,", "21,218", "(1,680").

    Years and thousands followed by a comma give a unigram vocabulary both `▁1990,`-like pieces and
    digit-comma pieces without `▁` (`1,`, `01,`), the two cases of the original's digit-comma rule.
    """
    rng = random.Random(seed)
    lines = []
    for _ in range(num_lines):
        tokens = []
        for _ in range(rng.randint(4, 14)):
            r = rng.random()
            if r < 0.2:
                tokens.append(f"{rng.randint(1700, 2024)},")
            elif r < 0.3:
                tokens.append(f"{rng.randint(1, 99)},{rng.randint(0, 999):03d}" + rng.choice(["", ",", " km"]))
            elif r < 0.35:
                tokens.append(f"({rng.randint(1, 9)},{rng.randint(0, 999):03d}")
            elif r < 0.4:
                tokens.append(f"{rng.randint(0, 99)},")
            else:
                tokens.append(rng.choice(DIGIT_COMMA_WORDS + ["founded", "it", "total", "area", "square",
                                                              "kilometres", "km", "million"]))
        lines.append(" ".join(tokens))
    return lines


def write_number_corpus(path, num_lines=4000, seed=0):
    """Writes `number_lines(num_lines, seed)` and one line of the user-defined symbols to `path`; returns str(path)."""
    lines = number_lines(num_lines, seed) + ["( ) \" - . – £ € ,"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)
