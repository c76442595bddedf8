"""What the foreign weight layouts (Hugging Face, keras-hub, tf-models SavedModels) share.

Each layout is described by a list of `Link`s between an original TF1 name (the checkpoint table's names, as in
the original `modeling.py`) and the name the other library uses, with the transform between the two values.
A `MappedReader` shows a foreign file under the TF1 names, so the checks and the streaming restore written for
Google's checkpoints (`reader.restore_tf1`) serve every layout; the writers walk the same links the other way.
"""

import collections
import dataclasses
import json

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.errors import InputError

# Names of one transformer block of the original, relative to `bert/encoder/transformer/group_{g}/inner_group_{k}/`.
BLOCK = "bert/encoder/transformer/group_{g}/inner_group_{k}/"


@dataclasses.dataclass(frozen=True)
class Transform:
    """Between a TF1 value and a foreign value of one variable.

    Args:
        name: str, for messages.
        to_tf1: callable, foreign array -> TF1 array.
        from_tf1: callable `(TF1 array, heads)` -> foreign array.
        tf1_shape: callable, foreign shape tuple -> TF1 shape tuple.
        foreign_shape: callable `(TF1 shape tuple, heads)` -> foreign shape tuple.
    """

    name: str
    to_tf1: callable
    from_tf1: callable
    tf1_shape: callable
    foreign_shape: callable


IDENTITY = Transform("identity", lambda x: x, lambda x, n: x, tuple, lambda s, n: tuple(s))
# torch.nn.Linear keeps `[out, in]`; the original's dense kernels are `[in, out]`.
TRANSPOSE = Transform("transpose", lambda x: x.T, lambda x, n: x.T, lambda s: tuple(reversed(s)),
                      lambda s, n: tuple(reversed(s)))
# Keras `EinsumDense` attention projections: query/key/value kernel `[H, N, D]`, bias `[N, D]`, output `[N, D, H]`.
SPLIT_KERNEL = Transform(
    "[H, N*D] <-> [H, N, D]", lambda x: x.reshape(x.shape[0], -1), lambda x, n: x.reshape(x.shape[0], n, -1),
    lambda s: (s[0], s[1] * s[2]), lambda s, n: (s[0], n, s[1] // n))
SPLIT_BIAS = Transform(
    "[N*D] <-> [N, D]", lambda x: x.reshape(-1), lambda x, n: x.reshape(n, -1), lambda s: (s[0] * s[1],),
    lambda s, n: (n, s[0] // n))
MERGE_OUTPUT = Transform(
    "[N*D, H] <-> [N, D, H]", lambda x: x.reshape(-1, x.shape[-1]), lambda x, n: x.reshape(n, -1, x.shape[-1]),
    lambda s: (s[0] * s[1], s[2]), lambda s, n: (n, s[0] // n, s[1]))


@dataclasses.dataclass(frozen=True)
class Link:
    """One TF1 name, the foreign name of the same variable, and the transform between their values."""

    tf1: str
    foreign: str
    transform: Transform = IDENTITY


def block_links(config, block_names):
    """Links of every transformer block: `block_names` maps a TF1 suffix to `(foreign pattern, transform)`."""
    links = []
    for g in range(config.num_hidden_groups):
        for k in range(config.inner_group_num):
            for suffix, (pattern, transform) in block_names.items():
                links.append(Link(BLOCK.format(g=g, k=k) + suffix, pattern.format(g=g, k=k), transform))
    return links


PROJECTION = ("bert/encoder/embedding_hidden_mapping_in/kernel", "bert/encoder/embedding_hidden_mapping_in/bias")


def check_identity_projection(path, kernel, bias, kernel_name):
    """HF and keras-hub always project E -> H; the original has no projection when E == H.

    Such a projection is dropped only when it is the identity with a zero bias (what our writers store);
    anything else cannot be expressed by the original architecture.
    """
    if not (np.array_equal(kernel, np.eye(kernel.shape[0], dtype=kernel.dtype)) and not np.any(bias)):
        raise InputError(
            f"`{path}`: `{kernel_name}` is not the identity, but embedding_size == hidden_size, where the original "
            "ALBERT has no embedding projection. This model cannot be expressed in the original architecture.")


class MappedReader:
    """A foreign weight file seen under the original TF1 names (what `reader.restore_tf1` reads).

    Args:
        prefix: str, the source path, shown in messages.
        entries: `OrderedDict` TF1 name -> `(tf1 shape, read)`, `read()` returning the TF1-layout value.
        skipped: list of str, foreign names that are not weights of the original (buffers, tied copies).
        may_lack: set of TF1 names the layout may leave out (e.g. the pooler of HF `AlbertForMaskedLM`); a
            model's variable among them keeps its initial value.
    """

    is_tf2 = False
    # The transformers class of a Hugging Face directory (`config.json`'s `architectures`): heads of several
    # classes share TF1 names (`output_weights`), so it says whose head they are.
    architecture = None

    def __init__(self, prefix, entries, skipped=(), may_lack=()):
        self.prefix = prefix
        self._entries = entries
        self.shapes = collections.OrderedDict((name, tuple(shape)) for name, (shape, _) in entries.items())
        self.skipped = list(skipped)
        self.may_lack = set(may_lack)

    def without(self, names):
        """This reader without the TF1 names `names` (a head that belongs to another class)."""
        reader = MappedReader(self.prefix, collections.OrderedDict(
            (name, entry) for name, entry in self._entries.items() if name not in set(names)), self.skipped,
            self.may_lack)
        reader.architecture = self.architecture
        return reader

    def read(self, name):
        """The value of TF1 name `name` as a numpy array in the original's layout."""
        try:
            return np.asarray(self._entries[name][1]())
        except (OSError, ValueError, TypeError) as e:
            raise InputError(f"Cannot read `{name}` from `{self.prefix}` (damaged file?): {e}") from None

    def read_tensor(self, name):
        """The value of `name` as a tensor."""
        return tf.convert_to_tensor(self.read(name))


def unmatched_error(path, layout, names, expected_hint):
    """The error for foreign names that have no place in the original's variables."""
    shown = "\n".join(f"    {name}" for name in sorted(names)[:200])
    more = f"\n    ... and {len(names) - 200} more" if len(names) > 200 else ""
    return InputError(f"`{path}` ({layout}) holds weights that match no ALBERT variable ({len(names)}):\n"
                      f"{shown}{more}\n  {expected_hint}")


def build_entries(path, links, present, read, layout, hint, skipped=()):
    """Pairs the foreign names `present` (name -> shape) with `links`; raises listing names that match none.

    Returns:
        `OrderedDict` TF1 name -> `(tf1 shape, read)` for `MappedReader`.
    """
    by_foreign = {link.foreign: link for link in links}
    unmatched = [name for name in present if name not in by_foreign and name not in skipped]
    if unmatched:
        raise unmatched_error(path, layout, unmatched, hint)
    entries = collections.OrderedDict()
    for link in links:
        if link.foreign not in present:
            continue
        shape = present[link.foreign]
        try:
            tf1_shape = link.transform.tf1_shape(tuple(shape))
        except (IndexError, TypeError):
            raise InputError(f"`{path}`: `{link.foreign}` has shape {list(shape)}; expected a shape that "
                             f"maps to `{link.tf1}` by {link.transform.name}.") from None
        entries[link.tf1] = (tf1_shape, _reader_for(read, link))
    return entries


def _reader_for(read, link):
    return lambda: link.transform.to_tf1(read(link.foreign))


def log_skipped(path, names):
    if names:
        logging.info("`%s`: not weights of the original, skipped: %s", path, ", ".join(sorted(names)))


def read_json(path):
    """The JSON file `path` (a foreign layout's config), or a `ValueError` naming the file, line and column."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(f"`{path}` is not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}.") from None
