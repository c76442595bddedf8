"""`AlbertConfig`: the original `albert_config.json`, field for field.

The fields, defaults and JSON handling follow `modeling.AlbertConfig` of the original release: defaults are
ALBERT-xxlarge's, `from_dict` keeps every key of the JSON (released files carry `net_structure_type`,
`gap_size`, `num_memory_blocks`, `layers_to_keep`, `down_scale_factor`), and `to_json_string` writes
`json.dumps(indent=2, sort_keys=True)`.
"""

import copy
import json
import numbers
import os

from absl import logging

from albert_tf import fileio
from albert_tf.errors import InputError

# The encoder's input names, int32 `[batch, seq]`: those of the original TF-Hub module's `tokens` signature, which
# every model, schema, serving signature and pipeline uses.
TOKEN_INPUTS = ("input_ids", "input_mask", "segment_ids")
ACTIVATIONS = ("gelu", "relu", "tanh", "linear")
# The keys of an `albert_config.json` that decide the architecture: every released config has them. The original
# `AlbertConfig.from_dict` fills a missing one from its constructor's defaults (xxlarge's 4096 / 64 heads / 12
# layers), which can run silently over a checkpoint of another size (ALBERT shares its layers, so 12 layers run
# over a 3-layer checkpoint without a shape error); a file without one is refused here instead.
REQUIRED_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
                 "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_act",
                 "max_position_embeddings", "type_vocab_size")

# Released English models (the `albert_config.json` of each release tarball). Keys beyond the constructor are those of the JSONs.
_COMMON = dict(
    vocab_size=30000,
    embedding_size=128,
    max_position_embeddings=512,
    type_vocab_size=2,
    initializer_range=0.02,
    num_hidden_groups=1,
    inner_group_num=1,
    net_structure_type=0,
    gap_size=0,
    num_memory_blocks=0,
    down_scale_factor=1,
    hidden_act="gelu",
)
_SIZES = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xlarge": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
    "xxlarge": dict(hidden_size=4096, num_hidden_layers=12, num_attention_heads=64, intermediate_size=16384),
}
# v1: dropout 0.1 except xxlarge (0); v2: no dropout anywhere (maintainer, google-research/albert#78).
_V1_DROPOUT = {"base": 0.1, "large": 0.1, "xlarge": 0.1, "xxlarge": 0.0}

PRESETS = {}
for _size, _dims in _SIZES.items():
    for _version in ("v1", "v2"):
        _dropout = _V1_DROPOUT[_size] if _version == "v1" else 0.0
        _preset = dict(_COMMON, **_dims)
        _preset.update(hidden_dropout_prob=_dropout, attention_probs_dropout_prob=_dropout)
        if _size == "xxlarge":
            _preset["layers_to_keep"] = []
        PRESETS[f"{_size}_{_version}"] = _preset
del _size, _dims, _version, _dropout, _preset


def check_max_seq_length(max_seq_length, max_position_embeddings, albert_config_file=None):
    """Raises `InputError` unless `max_seq_length <= max_position_embeddings` (the model's position table): the
    one check of every runner, the preprocessor and the pipelines; and that it is an int of at least 3 (`[CLS]`,
    one piece, `[SEP]`)."""
    if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, numbers.Integral) or max_seq_length < 3:
        raise InputError(f"`max_seq_length` must be an int >= 3 (`[CLS]`, a piece, `[SEP]`). Received: "
                         f"`max_seq_length={max_seq_length!r}`.")
    if int(max_seq_length) > int(max_position_embeddings):
        where = f" of {albert_config_file}" if albert_config_file else ""
        raise InputError(f"Cannot use sequence length {max_seq_length} because the ALBERT model was only "
                         f"trained up to sequence length {max_position_embeddings}: `max_seq_length` must be <= "
                         f"`max_position_embeddings`{where}.")

class AlbertConfig:
    """Configuration of an ALBERT encoder, with the original's field names and defaults.

    Args:
        vocab_size: int, size of the vocabulary (30000 for the English releases).
        embedding_size: int, width E of the factorized embeddings. Default 128.
        hidden_size: int, width H of the transformer. Default 4096.
        num_hidden_layers: int, number of layer applications L. Default 12.
        num_hidden_groups: int, number of parameter groups G; layer i uses group `int(i / L * G)`. Default 1.
        num_attention_heads: int, heads N; `hidden_size` must be divisible by it. Default 64.
        intermediate_size: int, FFN width. Default 16384.
        inner_group_num: int, blocks K applied in sequence by every layer. Default 1.
        down_scale_factor: int, stored and unused, as in the original. Default 1.
        hidden_act: str, one of `gelu` (tanh approximation), `relu`, `tanh`, `linear`. Default `gelu`.
        hidden_dropout_prob: float, dropout of embeddings, attention output and FFN output. Default 0.
        attention_probs_dropout_prob: float, dropout on attention probabilities. Default 0.
        max_position_embeddings: int, longest sequence. Default 512.
        type_vocab_size: int, number of segment ids. Default 2.
        initializer_range: float, stddev of the truncated-normal initializer. Default 0.02.
        **extra: any other key of a released JSON; kept and written back.
    """

    def __init__(self, vocab_size=None, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
                 num_hidden_groups=1, num_attention_heads=64, intermediate_size=16384, inner_group_num=1,
                 down_scale_factor=1, hidden_act="gelu", hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2,
                 initializer_range=0.02, **extra):
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_hidden_groups = num_hidden_groups
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.inner_group_num = inner_group_num
        self.down_scale_factor = down_scale_factor
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        for key, value in extra.items():
            setattr(self, key, value)

    # --- construction -------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, json_object):
        """Builds a config from a dict, keeping every key (as the original does). The keys of `REQUIRED_KEYS` the
        dict lacks take the constructor's defaults (the original's, built for xxlarge), with a warning naming
        them: a later error about such a value then has its origin (`from_json_file` refuses them instead)."""
        if not isinstance(json_object, dict):
            raise TypeError(f"`json_object` must be a dict. Received: {type(json_object).__name__}.")
        config = cls(vocab_size=None)
        missing = [key for key in REQUIRED_KEYS if key not in json_object and key != "vocab_size"]
        if missing:
            logging.warning("The config lacks %s, which decide the model's architecture: the constructor's "
                            "defaults (built for xxlarge) are used: %s.", ", ".join(missing),
                            ", ".join(f"{key}={getattr(config, key)!r}" for key in missing))
        for key, value in json_object.items():
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file):
        """Reads an `albert_config.json`; a file without one of `REQUIRED_KEYS` is an `InputError` naming them."""
        json_file = os.fspath(json_file)
        try:
            with open(json_file, "r", encoding="utf-8") as reader:
                text = reader.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"ALBERT config file not found: `{json_file}`.") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"`{json_file}` is not valid JSON (line {e.lineno}, column {e.colno}): "
                             f"{e.msg}.") from None
        if not isinstance(data, dict):
            raise InputError(f"`{json_file}` must hold a JSON object of config fields. "
                             f"Received: {type(data).__name__}.")
        missing = [key for key in REQUIRED_KEYS if key not in data]
        if missing:
            raise InputError(f"`{json_file}` lacks the key(s) {', '.join(missing)}, which decide the model's "
                             "architecture: every released `albert_config.json` has them (the original filled a "
                             "missing one from its constructor's defaults, built for xxlarge).")
        config = cls.from_dict(data)
        try:
            config.validate()
        except ValueError as e:
            raise InputError(f"Invalid ALBERT config `{json_file}`: {e}") from None
        return config

    @classmethod
    def from_preset(cls, name):
        """Config of a released English model: `base_v1` ... `xxlarge_v2` (their `albert_config.json`)."""
        if name not in PRESETS:
            raise InputError(f"Unknown preset `{name}`. Expected one of: {', '.join(sorted(PRESETS))}.")
        return cls.from_dict(copy.deepcopy(PRESETS[name]))

    # --- output -------------------------------------------------------------------------------------

    def to_dict(self):
        return copy.deepcopy(self.__dict__)

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        """Writes the JSON atomically (temporary name, then rename)."""
        fileio.write_text_atomic(os.fspath(json_file), self.to_json_string())

    def copy(self):
        return self.from_dict(self.to_dict())

    # --- checks -------------------------------------------------------------------------------------

    def validate(self):
        """Raises `ValueError` naming the field and value when the config cannot build a model."""
        for name in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
                     "num_attention_heads", "intermediate_size", "inner_group_num",
                     "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name, None)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"`{name}` must be a positive integer. Received: `{name}={value!r}`.")
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                "`hidden_size` must be divisible by `num_attention_heads`. Received: "
                f"`hidden_size={self.hidden_size}`, `num_attention_heads={self.num_attention_heads}`.")
        if self.num_hidden_groups > self.num_hidden_layers:
            raise InputError(
                "`num_hidden_groups` must not exceed `num_hidden_layers` (a group would never be used). "
                f"Received: `num_hidden_groups={self.num_hidden_groups}`, "
                f"`num_hidden_layers={self.num_hidden_layers}`.")
        act = self.hidden_act
        if isinstance(act, str) and act.lower() not in ACTIVATIONS + ("",):
            raise InputError(f"`hidden_act` must be one of {', '.join(ACTIVATIONS)}. "
                             f"Received: `hidden_act={act!r}`.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise InputError(f"`{name}` must be a float in [0, 1). Received: `{name}={value!r}`.")
        if not isinstance(self.initializer_range, (int, float)) or self.initializer_range <= 0:
            raise InputError("`initializer_range` must be a positive float. "
                             f"Received: `initializer_range={self.initializer_range!r}`.")
        return self

    def group_of_layer(self, layer_idx):
        """Group used by layer `layer_idx`: `int(layer_idx / L * G)`, the original's float formula."""
        return int(layer_idx / self.num_hidden_layers * self.num_hidden_groups)

    def __eq__(self, other):
        return isinstance(other, AlbertConfig) and self.__dict__ == other.__dict__

    def __repr__(self):
        return f"AlbertConfig({self.to_json_string()})"
