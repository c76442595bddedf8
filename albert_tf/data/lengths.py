"""Sequence lengths for length-aware batches: real text is short, and a batch padded to its longest member
costs a fraction of one padded to the maximum length. Lengths are rounded up to a small set (multiples of
`LENGTH_MULTIPLE`, and the maximum itself), so a compiled function is reused across batches instead of traced
again for every new length. The attention mask hides padding, so the outputs at the real positions do not
depend on the length chosen.
"""

LENGTH_MULTIPLE = 32


def padded_length(length, max_length, multiple=LENGTH_MULTIPLE):
    """The length a batch whose longest member has `length` tokens is padded to: `length` rounded up to a
    multiple of `multiple`, at most `max_length` (and at least 1).

    >>> padded_length(20, 512), padded_length(33, 512), padded_length(500, 512), padded_length(0, 128)
    (32, 64, 512, 32)
    """
    if max_length < 1:
        raise ValueError(f"max_length must be positive, got {max_length}")
    rounded = -(-max(int(length), 1) // multiple) * multiple
    return min(rounded, int(max_length))


def bucket_lengths(max_length, multiple=LENGTH_MULTIPLE):
    """Every length `padded_length` can return for `max_length`, in increasing order."""
    return sorted({padded_length(n, max_length, multiple) for n in range(1, int(max_length) + 1)})


def batches_by_length(lengths, batch_size):
    """Indices of `lengths` grouped into batches of similar length (a stable sort by length, cut every
    `batch_size`), so each batch pads little; callers put the results back in input order.

    Returns:
        a list of lists of indices into `lengths`.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
