"""`random.Random.shuffle` with the same draws, without a Python call per swap.

CPython's shuffle swaps x[i] with x[randbelow(i + 1)] for i = n-1 .. 1, where randbelow(m) takes
`getrandbits(m.bit_length())` (the top bits of one 32-bit Mersenne Twister word) until it is < m.
`getrandbits(32 * k)` hands out the next k words in the same order, so the loops below consume exactly
the words `shuffle` would (fetching only as many words as steps remain, so they never read ahead). The
pretraining writer shuffles the n-gram starts of every instance twice (as `create_masked_lm_predictions`
in the original `create_pretraining_data.py`), which makes this loop a large share of its run time;
`benchmarks/bench_pretraining_data.py --shuffle_and_encoder` measures it. An import-time check falls back
to `rng.shuffle` on any interpreter where the two disagree; `tests/tasks/pretraining/test_pretraining_data.py` compares
both with `random.shuffle`.
"""

import random
import sys

_SHIFT = [32 - (i + 1).bit_length() for i in range(1 << 16)]  # randbelow(i + 1) keeps word >> _SHIFT[i]


def _words(rng, count):
    return memoryview(rng.getrandbits(32 * count).to_bytes(4 * count, "little")).cast("I")


def _shuffled_range_fast(rng, n):
    x = list(range(n))
    i = n - 1
    shift = _SHIFT
    while i > 0:
        for w in _words(rng, i):
            r = w >> shift[i]
            if r <= i:
                x[i], x[r] = x[r], x[i]
                i -= 1
    return x


def _advance_shuffle_fast(rng, n):
    i = n - 1
    shift = _SHIFT
    while i > 0:
        for w in _words(rng, i):
            if w >> shift[i] <= i:
                i -= 1


def _fast_shuffle_is_exact():
    if sys.byteorder != "little":
        return False
    for n in (0, 1, 2, 3, 5, 17, 64, 257, 1000):
        a, b, c = random.Random(n), random.Random(n), random.Random(n)
        expected = list(range(n))
        a.shuffle(expected)
        if _shuffled_range_fast(b, n) != expected:
            return False
        _advance_shuffle_fast(c, n)
        if not a.random() == b.random() == c.random():
            return False
    return True


_FAST_SHUFFLE = _fast_shuffle_is_exact()


def shuffled_range(rng, n):
    """`x = list(range(n)); rng.shuffle(x); return x`, with the same random draws."""
    if _FAST_SHUFFLE and n <= len(_SHIFT):
        return _shuffled_range_fast(rng, n)
    x = list(range(n))
    rng.shuffle(x)
    return x


def advance_shuffle(rng, n):
    """Consumes the draws of `rng.shuffle` on `n` items, without shuffling anything."""
    if _FAST_SHUFFLE and n <= len(_SHIFT):
        _advance_shuffle_fast(rng, n)
    else:
        rng.shuffle([None] * n)


