"""Text modes: how `albert_tf.AlbertPreprocessor` recognises, checks and packs one kind of raw-text input.

A mode is a `TextMode`. The `text` mode (single sentences and sentence pairs, GLUE `convert_single_example`) is
declared here, for every model that takes sentences; a task whose model takes other text declares its mode in its
own folder (`albert_tf.tasks.<task>.kind`) and names it in its model kind (`registry.ModelKind.text_mode`),
so that the preprocessor finds it through the registry (`registry.text_modes()`) and names no task. A mode
registered on its own (`registry.register_text_mode`) is found the same way.

A mode's packing lengths besides `max_seq_length` (the question limit of SQuAD, the question+option limit of RACE,
the mask slots of `masked`) are its `lengths` (`Length`: the original flag's name, default and help):
`AlbertPreprocessor`, `TextPipeline`, the exports and `albert-export`'s flags take them by name from every
registered mode (`lengths()`, `resolve_lengths`), so they name no task either.

The preprocessor picks a mode by the inputs' structure: a dict is the mode whose `keys` it holds (the mode with
the most keys first), anything else is `text`; a mode without `keys` (`pack_pairs` only) is only used when asked
for by name, and packs what `text` recognises.
"""

import dataclasses
import types

import numpy as np
import tensorflow as tf

from albert_tf import registry
from albert_tf.errors import InputError


@dataclasses.dataclass(frozen=True)
class Length:
    """A packing length that a text mode takes besides `max_seq_length`.

    Attributes:
        name: str, its keyword (the original's flag name, e.g. `max_query_length`).
        default: int, the original's default.
        help: str, what it limits (the `albert-export` flag's help).
        room: optional int, the tokens the packing needs beside it in `max_seq_length`: a default that does not
            fit shrinks to `max_seq_length - room` where the caller asks for that (`resolve_lengths(shrink=True)`).
    """

    name: str
    default: int
    help: str
    room: int = None

    def default_for(self, max_seq_length, shrink=True):
        """The default for sequences of `max_seq_length` tokens."""
        if shrink and self.room is not None:
            return min(self.default, max_seq_length - self.room)
        return self.default


@dataclasses.dataclass(frozen=True)
class TextMode:
    """One text mode of `AlbertPreprocessor`.

    Attributes:
        name: str, the `mode` argument of `AlbertPreprocessor.call` and the model classes' `_PREPROCESS_MODE`.
        keys: tuple of str, the dict keys that select this mode (all of them present); () when the mode is only
            asked for by name.
        layout: str, the dict layout in the error that lists the accepted layouts (e.g. "`question` and `context`
            (SQuAD)"); "" for a mode without `keys`.
        validate: optional callable `(preprocessor, inputs)`, InputError when dict `inputs` (string tensors) of
            this mode are not what `pack` takes.
        pack: optional callable `(preprocessor, inputs) -> dict of int32 features`, for dict `inputs` of this mode.
        pack_pairs: optional callable `(preprocessor, text_a, text_b) -> dict of int32 features`, for sentences and
            pairs (`text_b` empty strings for single sentences); a mode with it takes what `text` recognises.
        check: optional callable `(holder)`, InputError when the lengths of `holder` (an `AlbertPreprocessor`, a
            `TextPipeline`, or an export's lengths: `max_seq_length` and one attribute per `Length`) leave no room
            for this mode's packing.
        lengths: tuple of `Length`, the packing lengths this mode takes besides `max_seq_length` (keywords of
            `AlbertPreprocessor`, `TextPipeline` and the exports).
    """

    name: str
    keys: tuple = ()
    layout: str = ""
    validate: object = None
    pack: object = None
    pack_pairs: object = None
    check: object = None
    lengths: tuple = ()

    @property
    def takes_pairs(self):
        """True when the mode packs sentences and sentence pairs (`pack_pairs`)."""
        return self.pack_pairs is not None


def strings(name, value):
    """`value` as a tf.string tensor; InputError for anything that is not text."""
    if isinstance(value, tf.Tensor):
        if value.dtype != tf.string:
            raise InputError(f"`{name}` must be strings. Received a {value.dtype.name} tensor.")
        return value
    if isinstance(value, (str, bytes)):
        value = [value]
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise InputError(f"`{name}` must be a string or a list of strings. Received: {type(value).__name__} "
                         f"({e}).") from None
    if tensor.dtype != tf.string:
        raise InputError(f"`{name}` must be strings. Received values of dtype {tensor.dtype.name}.")
    return tensor


def flat_strings(name, value):
    """`strings(name, value)` reshaped to `[batch]`."""
    return tf.reshape(strings(name, value), [-1])


def check_same_batch(*named):
    """InputError when named tensors have different static batch sizes (first dimension)."""
    sizes = {name: t.shape[0] for name, t in named if t.shape.rank and t.shape[0] is not None}
    if len(set(sizes.values())) > 1:
        raise InputError("Text inputs must have one entry per example. Received sizes: "
                         + ", ".join(f"{name}={size}" for name, size in sizes.items()) + ".")


def check_keys_same_batch(inputs, names):
    """`check_same_batch` of the entries `names` of dict `inputs` that are there."""
    check_same_batch(*((name, inputs[name]) for name in names if name in inputs))


def _validate_text(preprocessor, inputs):
    del preprocessor
    check_keys_same_batch(inputs, ("text_a", "text_b"))


def _pack_text(preprocessor, text_a, text_b):
    return preprocessor.pipeline.pack_texts(text_a, text_b)


# Single sentences and sentence pairs: GLUE `convert_single_example` (`[CLS] a [SEP] (b [SEP])`).
TEXT = registry.register_text_mode(TextMode(
    name="text", keys=("text_a",), layout="`text_a` (and optionally `text_b`)", validate=_validate_text,
    pack_pairs=_pack_text))


def lengths():
    """`{name: Length}` of the lengths of every registered mode, in mode order."""
    found = {}
    for mode in registry.text_modes():
        for length in mode.lengths:
            found.setdefault(length.name, length)
    return found


def positive_int(name, value, minimum=1):
    """`value` as an int; InputError naming `name` unless it is an int >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"`{name}` must be an int >= {minimum}. Received: `{name}={value!r}`.")
    return int(value)


def resolve_lengths(given, max_seq_length, shrink=True):
    """`{name: int}` of every registered length: the value in `given` (None: not given), else its default for
    `max_seq_length` (`Length.default_for`); InputError for a name that is no mode's length or a value that is
    not a positive int."""
    known = lengths()
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InputError(f"Unknown length {', '.join(f'`{name}`' for name in unknown)}: the text modes' lengths "
                         f"are {', '.join(f'`{name}`' for name in known)}.")
    resolved = {}
    for name, length in known.items():
        value = given.get(name)
        resolved[name] = positive_int(name, length.default_for(max_seq_length, shrink) if value is None else value)
    return resolved


def check_lengths(mode, max_seq_length, resolved):
    """Runs `mode.check` (when it has one) on the lengths `max_seq_length` and `resolved` (`resolve_lengths`)."""
    if mode is not None and mode.check is not None:
        mode.check(types.SimpleNamespace(max_seq_length=max_seq_length, **resolved))


def get(name):
    """The registered mode `name`, or None."""
    return registry.text_mode(name)


def names():
    """The names of every registered mode (`text` first, then by kind order)."""
    return tuple(mode.name for mode in registry.text_modes())


def by_keys(keys):
    """The mode whose `keys` the dict keys `keys` hold (the one with the most keys first), or None."""
    keyed = [mode for mode in registry.text_modes() if mode.keys]
    for mode in sorted(keyed, key=lambda mode: -len(mode.keys)):
        if set(mode.keys) <= set(keys):
            return mode
    return None


def layouts():
    """The dict layouts of every mode with `keys`, as an error lists them (`A, B, or C`)."""
    parts = [mode.layout for mode in registry.text_modes() if mode.keys]
    if len(parts) < 3:
        return " or ".join(parts)
    return ", ".join(parts[:-1]) + ", or " + parts[-1]
