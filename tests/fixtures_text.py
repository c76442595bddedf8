"""Shared text fixtures of the tokenizer tests: a corpus whose SentencePiece vocabulary has digit-comma pieces."""

import random

# Common English words; the numbers with trailing commas make pieces like `▁1990,` and `90,` (§6's rule).
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
