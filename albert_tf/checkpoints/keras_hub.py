"""keras-hub `AlbertBackbone` presets: `config.json`, `model.weights.h5`, `tokenizer.json`, `metadata.json`, assets.

The weights file is Keras 3's `.weights.h5`: for each layer of the functional backbone, a group
`layers/<snake_case class name>[_n]` whose `vars` group carries the layer's name (attribute `name`) and its
variables as datasets `0`, `1`, ... in creation order; sub-layers nest under their attribute names. Reading
goes by the layers' names (`token_embedding`, `group_0_inner_layer_1`, `pooled_dense`, ...) with h5py, one
dataset at a time; writing produces the same tree without importing keras-hub. Attention projections are
`EinsumDense` kernels `[H, N, D]` / `[N, D, H]`, reshaped to the original's `[H, N*D]` / `[N*D, H]`.
"""

import json
import os

import h5py
import keras
import numpy as np

from albert_tf import fileio
from albert_tf.checkpoints import foreign
from albert_tf.checkpoints.foreign import MERGE_OUTPUT, SPLIT_BIAS, SPLIT_KERNEL, Link
from albert_tf.errors import InputError

CONFIG = "config.json"
WEIGHTS = "model.weights.h5"
TOKENIZER = "tokenizer.json"
METADATA = "metadata.json"
SPM = os.path.join("assets", "tokenizer", "vocabulary.spm")
BACKBONE = "AlbertBackbone"
REGISTERED_NAME = "keras_hub>AlbertBackbone"

_ATTENTION = "{layer}/_self_attention_layer/"
_BLOCK = {
    "attention_1/self/query/kernel": (_ATTENTION + "query_dense/vars/0", SPLIT_KERNEL),
    "attention_1/self/query/bias": (_ATTENTION + "query_dense/vars/1", SPLIT_BIAS),
    "attention_1/self/key/kernel": (_ATTENTION + "key_dense/vars/0", SPLIT_KERNEL),
    "attention_1/self/key/bias": (_ATTENTION + "key_dense/vars/1", SPLIT_BIAS),
    "attention_1/self/value/kernel": (_ATTENTION + "value_dense/vars/0", SPLIT_KERNEL),
    "attention_1/self/value/bias": (_ATTENTION + "value_dense/vars/1", SPLIT_BIAS),
    "attention_1/output/dense/kernel": (_ATTENTION + "output_dense/vars/0", MERGE_OUTPUT),
    "attention_1/output/dense/bias": (_ATTENTION + "output_dense/vars/1", foreign.IDENTITY),
    "LayerNorm/gamma": ("{layer}/_self_attention_layer_norm/vars/0", foreign.IDENTITY),
    "LayerNorm/beta": ("{layer}/_self_attention_layer_norm/vars/1", foreign.IDENTITY),
    "ffn_1/intermediate/dense/kernel": ("{layer}/_feedforward_intermediate_dense/vars/0", foreign.IDENTITY),
    "ffn_1/intermediate/dense/bias": ("{layer}/_feedforward_intermediate_dense/vars/1", foreign.IDENTITY),
    "ffn_1/intermediate/output/dense/kernel": ("{layer}/_feedforward_output_dense/vars/0", foreign.IDENTITY),
    "ffn_1/intermediate/output/dense/bias": ("{layer}/_feedforward_output_dense/vars/1", foreign.IDENTITY),
    "LayerNorm_1/gamma": ("{layer}/_feedforward_layer_norm/vars/0", foreign.IDENTITY),
    "LayerNorm_1/beta": ("{layer}/_feedforward_layer_norm/vars/1", foreign.IDENTITY),
}
_BLOCK = {suffix: (pattern.replace("{layer}", "group_{g}_inner_layer_{k}"), transform)
          for suffix, (pattern, transform) in _BLOCK.items()}
_PROJECTION = ("embedding_projection/vars/0", "embedding_projection/vars/1")


def links(config):
    """Every TF1 name <-> keras-hub layer path link of the backbone for `config`."""
    result = [
        Link("bert/embeddings/word_embeddings", "token_embedding/vars/0"),
        Link("bert/embeddings/token_type_embeddings", "segment_embedding/vars/0"),
        Link("bert/embeddings/position_embeddings", "position_embedding/vars/0"),
        Link("bert/embeddings/LayerNorm/gamma", "embeddings_layer_norm/vars/0"),
        Link("bert/embeddings/LayerNorm/beta", "embeddings_layer_norm/vars/1"),
    ]
    if config.embedding_size != config.hidden_size:
        result += [Link(foreign.PROJECTION[0], _PROJECTION[0]), Link(foreign.PROJECTION[1], _PROJECTION[1])]
    result += foreign.block_links(config, _BLOCK)
    result += [Link("bert/pooler/dense/kernel", "pooled_dense/vars/0"),
               Link("bert/pooler/dense/bias", "pooled_dense/vars/1")]
    return result


# --- detection and config -------------------------------------------------------------------------------------

def is_preset_dir(directory):
    """True when `directory/config.json` is a serialized Keras object (a keras-hub preset)."""
    path = os.path.join(directory, CONFIG)
    if not os.path.isfile(path):
        return False
    config = foreign.read_json(path)
    return isinstance(config, dict) and "registered_name" in config


def config_dict(directory):
    """The `AlbertConfig` fields for a keras-hub `AlbertBackbone` preset's `config.json`."""
    path = os.path.join(directory, CONFIG)
    data = foreign.read_json(path)
    if data.get("class_name") != BACKBONE and data.get("registered_name") != REGISTERED_NAME:
        raise InputError(f"`{path}` describes `{data.get('registered_name') or data.get('class_name')}`; expected "
                         f"keras-hub's `{REGISTERED_NAME}`.")
    kh = data.get("config", {})
    needed = ("vocabulary_size", "num_layers", "num_heads", "embedding_dim", "hidden_dim", "intermediate_dim")
    missing = [key for key in needed if key not in kh]
    if missing:
        raise InputError(f"`{path}` lacks {', '.join(missing)} in `config`.")
    dropout = kh.get("dropout", 0.0)
    return dict(vocab_size=kh["vocabulary_size"], embedding_size=kh["embedding_dim"], hidden_size=kh["hidden_dim"],
                num_hidden_layers=kh["num_layers"], num_hidden_groups=kh.get("num_groups", 1),
                num_attention_heads=kh["num_heads"], intermediate_size=kh["intermediate_dim"],
                inner_group_num=kh.get("num_inner_repetitions", 1), hidden_act="gelu",
                hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                max_position_embeddings=kh.get("max_sequence_length", 512), type_vocab_size=kh.get("num_segments", 2),
                initializer_range=0.02)


def backbone_config(config):
    """keras-hub's `config.json` for our `config` (keras-hub's backbone: tanh GELU, one dropout rate)."""
    if config.hidden_act != "gelu":
        raise InputError(f"keras-hub's AlbertBackbone always uses the tanh GELU; `hidden_act={config.hidden_act!r}` "
                         "cannot be written as a keras-hub preset.")
    if config.num_hidden_layers % config.num_hidden_groups:
        raise InputError(f"keras-hub's AlbertBackbone needs `num_hidden_layers` ({config.num_hidden_layers}) "
                         f"divisible by `num_hidden_groups` ({config.num_hidden_groups}).")
    if config.hidden_dropout_prob != config.attention_probs_dropout_prob:
        raise InputError("keras-hub's AlbertBackbone has one dropout rate; this config has "
                         f"`hidden_dropout_prob={config.hidden_dropout_prob}` and "
                         f"`attention_probs_dropout_prob={config.attention_probs_dropout_prob}`.")
    return {
        "module": "keras_hub.src.models.albert.albert_backbone",
        "class_name": BACKBONE,
        "config": {
            "name": "albert_backbone", "trainable": True,
            "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
                      "registered_name": None},
            "vocabulary_size": config.vocab_size, "num_layers": config.num_hidden_layers,
            "num_heads": config.num_attention_heads, "num_groups": config.num_hidden_groups,
            "num_inner_repetitions": config.inner_group_num, "embedding_dim": config.embedding_size,
            "hidden_dim": config.hidden_size, "intermediate_dim": config.intermediate_size,
            "dropout": config.hidden_dropout_prob, "max_sequence_length": config.max_position_embeddings,
            "num_segments": config.type_vocab_size,
        },
        "registered_name": REGISTERED_NAME,
    }


# --- reading ----------------------------------------------------------------------------------------------------

def _datasets(path, handle, config):
    """`{layer name/relative path: dataset path}` of every variable in a Keras 3 `.weights.h5`.

    Layers are known by the `name` attribute Keras writes on their `vars` group; files without it (written by
    older Keras 3 releases) are read by the group names of the backbone's functional layout.
    """
    found = {}
    layers = handle.get("layers")
    if layers is None:
        raise InputError(f"`{path}` is not a Keras 3 weights file: it has no `layers` group.")
    by_group = {group: layer for group, layer, _ in _layout(config)}
    for group_name, group in layers.items():
        vars_group = group.get("vars")
        layer_name = vars_group.attrs.get("name") if vars_group is not None else None
        layer_name = by_group.get(group_name) if layer_name is None else layer_name
        if layer_name is None:
            raise InputError(f"`{path}`: layer group `layers/{group_name}` is not a layer of keras-hub's "
                             "AlbertBackbone (and names no layer).")
        if isinstance(layer_name, bytes):
            layer_name = layer_name.decode("utf-8")

        def visit(relative, obj, layer_name=layer_name, group_name=group_name):
            if isinstance(obj, h5py.Dataset):
                found[f"{layer_name}/{relative}"] = f"layers/{group_name}/{relative}"

        group.visititems(visit)
    return found


class _H5:
    """An open `.weights.h5`, read one dataset at a time."""

    def __init__(self, path):
        self.path = path
        try:
            self.handle = h5py.File(path, "r")
        except OSError as e:
            raise InputError(f"Cannot open `{path}` as an HDF5 weights file (truncated or damaged?): {e}") from None

    def read(self, dataset_path):
        dataset = self.handle[dataset_path]
        if dataset.dtype.kind != "f":
            raise InputError(f"`{self.path}`: `{dataset_path}` has dtype {dataset.dtype}; expected floats.")
        try:
            return dataset[()]
        except OSError as e:
            raise InputError(f"Cannot read `{dataset_path}` from `{self.path}` (truncated or damaged?): {e}") \
                from None


# --- task presets -----------------------------------------------------------------------------------------------

TASK = "task.json"
TASK_WEIGHTS = "task.weights.h5"
PREPROCESSOR = "preprocessor.json"
# keras-hub task class -> the TF1 names of its head, each with (layer name of the `vars` group, path below that
# layer's group, transform). `AlbertTextClassifier`: pooled -> dropout -> Dense `logits` (the original GLUE head,
# `output_weights [n, H]` is the transposed kernel); `AlbertMaskedLM`: `MaskedLMHead` `mlm_head` (dense, LayerNorm,
# the tied embeddings, `output_bias`), as `cls/predictions` of the original.
_TASK_HEADS = {
    "AlbertTextClassifier": (
        ("output_weights", "logits", "vars/0", foreign.TRANSPOSE),
        ("output_bias", "logits", "vars/1", foreign.IDENTITY)),
    "AlbertMaskedLM": (
        ("cls/predictions/transform/dense/kernel", "mlm_head", "_intermediate_dense/vars/0", foreign.IDENTITY),
        ("cls/predictions/transform/dense/bias", "mlm_head", "_intermediate_dense/vars/1", foreign.IDENTITY),
        ("cls/predictions/transform/LayerNorm/gamma", "mlm_head", "_intermediate_layer_norm/vars/0",
         foreign.IDENTITY),
        ("cls/predictions/transform/LayerNorm/beta", "mlm_head", "_intermediate_layer_norm/vars/1",
         foreign.IDENTITY),
        ("cls/predictions/output_bias", "mlm_head", "vars/0", foreign.IDENTITY)),
}


def task_class(directory):
    """The keras-hub task class of a `save_to_preset` directory of a task (`task.json`), or None."""
    path = os.path.join(directory, TASK)
    if not os.path.isfile(path):
        return None
    data = foreign.read_json(path)
    return data.get("class_name") if isinstance(data, dict) else None


def sequence_length(directory):
    """The preset's preprocessor `sequence_length` (`preprocessor.json`, else `task.json`'s), or None."""
    for name in (PREPROCESSOR, TASK):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            data = foreign.read_json(path).get("config", {})
            data = data.get("preprocessor", {}).get("config", {}) if name == TASK else data
            if isinstance(data.get("sequence_length"), int):
                return data["sequence_length"]
    return None


def _task_entries(directory):
    """`{TF1 name: (tf1 shape, read)}` of the head in the preset's `task.weights.h5` (empty without a task)."""
    cls = task_class(directory)
    path = os.path.join(directory, TASK_WEIGHTS)
    if cls is None:
        if os.path.isfile(path):
            # A task preset that lost `task.json`: its head cannot be told apart, and reading the backbone alone
            # would give a task model a fresh head with no word.
            raise InputError(f"keras-hub task preset `{directory}` has `{TASK_WEIGHTS}` but no `{TASK}` (which "
                             f"names its task class): copy `{TASK}` back, or remove `{TASK_WEIGHTS}` to use the "
                             "backbone alone.")
        return {}
    if cls not in _TASK_HEADS:
        raise InputError(f"`{os.path.join(directory, TASK)}` is a keras-hub `{cls}`, whose head albert_tf cannot "
                         f"read (it reads {', '.join(_TASK_HEADS)}); load the backbone preset (`config.json`, "
                         f"`{WEIGHTS}`) without `{TASK}` to use the encoder alone.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"keras-hub task preset `{directory}` has `{TASK}` but no `{TASK_WEIGHTS}`.")
    h5 = _H5(path)
    layers = {}
    for group_name, group in (h5.handle.get("layers") or {}).items():
        vars_group = group.get("vars")
        name = vars_group.attrs.get("name") if vars_group is not None else None
        layers[name.decode("utf-8") if isinstance(name, bytes) else name] = f"layers/{group_name}"
    entries = {}
    for tf1_name, layer, relative, transform in _TASK_HEADS[cls]:
        dataset = f"{layers.get(layer)}/{relative}"
        if layer not in layers or dataset not in h5.handle:
            raise InputError(f"`{path}` ({cls}) has no `{relative}` in a layer named `{layer}`; the head cannot "
                             "be read.")
        shape = transform.tf1_shape(tuple(h5.handle[dataset].shape))
        entries[tf1_name] = (shape, lambda dataset=dataset, transform=transform: transform.to_tf1(h5.read(dataset)))
    return entries


def open_reader(directory, config):
    """A `MappedReader` of the preset's `model.weights.h5` (and of a task preset's head in `task.weights.h5`)
    under the original names."""
    path = os.path.join(directory, WEIGHTS)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"keras-hub preset `{directory}` has no `{WEIGHTS}`.")
    h5 = _H5(path)
    paths = _datasets(path, h5.handle, config)
    shapes = {name: tuple(h5.handle[dataset].shape) for name, dataset in paths.items()}

    def read(name):
        return h5.read(paths[name])

    skipped = []
    if config.embedding_size == config.hidden_size and _PROJECTION[0] in shapes:
        foreign.check_identity_projection(path, read(_PROJECTION[0]), read(_PROJECTION[1]),
                                          "embedding_projection")
        skipped += list(_PROJECTION)
    entries = foreign.build_entries(
        path, links(config), shapes, read, "keras-hub AlbertBackbone",
        f"Expected the variables of keras-hub's AlbertBackbone with {config.num_hidden_groups} groups x "
        f"{config.inner_group_num} inner layers (its config.json).", skipped=set(skipped))
    foreign.log_skipped(path, skipped)
    entries.update(_task_entries(directory))
    return foreign.MappedReader(path, entries, skipped)


# --- writing ----------------------------------------------------------------------------------------------------

# The backbone's layers in functional order: (h5 group, layer name, variables); h5 groups are the snake_case
# class names Keras 3 gives container entries, numbered per class in this order.
def _layout(config):
    layers = [("input_layer", "token_ids", 0), ("input_layer_1", "segment_ids", 0),
              ("input_layer_2", "padding_mask", 0), ("reversible_embedding", "token_embedding", 1),
              ("position_embedding", "position_embedding", 1), ("embedding", "segment_embedding", 1),
              ("add", "embeddings_add", 0), ("layer_normalization", "embeddings_layer_norm", 2),
              ("dropout", "embeddings_dropout", 0), ("dense", "embedding_projection", 2)]
    index = 0
    for g in range(config.num_hidden_groups):
        for k in range(config.inner_group_num):
            group = "transformer_encoder" + (f"_{index}" if index else "")
            layers.append((group, f"group_{g}_inner_layer_{k}", None))
            index += 1
    layers.append(("dense_1", "pooled_dense", 2))
    return layers


_ENCODER_SUBLAYERS = (  # (path inside a TransformerEncoder group, layer name, number of variables)
    ("_feedforward_dropout", "feedforward_dropout", 0),
    ("_feedforward_intermediate_dense", "feedforward_intermediate_dense", 2),
    ("_feedforward_layer_norm", "feedforward_layer_norm", 2),
    ("_feedforward_output_dense", "feedforward_output_dense", 2),
    ("_self_attention_dropout", "self_attention_dropout", 0),
    ("_self_attention_layer", "self_attention_layer", 0),
    ("_self_attention_layer/_dropout_layer", "dropout", 0),
    ("_self_attention_layer/_softmax", "softmax", 0),
    ("_self_attention_layer/key_dense", "key", 2),
    ("_self_attention_layer/output_dense", "attention_output", 2),
    ("_self_attention_layer/query_dense", "query", 2),
    ("_self_attention_layer/value_dense", "value", 2),
    ("_self_attention_layer_norm", "self_attention_layer_norm", 2),
)


def write(tf1_values, config, directory, spm_model_file=None):
    """Writes a keras-hub `AlbertBackbone` preset (config, weights, metadata, tokenizer) into `directory`.

    Args:
        tf1_values: `OrderedDict` TF1 name -> `(shape, producer)` of the encoder's variables.
        config: `AlbertConfig`.
        directory: str, existing output directory.
        spm_model_file: str or None, the SentencePiece model for `assets/tokenizer/vocabulary.spm`.
    """
    backbone = backbone_config(config)
    by_tf1 = {link.tf1: link for link in links(config)}
    heads = config.num_attention_heads
    values = {}
    for name, (shape, producer) in tf1_values.items():
        link = by_tf1[name]
        values[link.foreign] = (link.transform.foreign_shape(shape, heads), link, producer)
    if config.embedding_size == config.hidden_size:
        size = config.hidden_size
        values[_PROJECTION[0]] = ((size, size), None, lambda: np.eye(size, dtype=np.float32))
        values[_PROJECTION[1]] = ((size,), None, lambda: np.zeros(size, np.float32))
    weights = os.path.join(directory, WEIGHTS)
    written = set()
    with fileio.atomic_path(weights) as tmp:
        with h5py.File(tmp, "w") as handle:
            handle.create_group("vars").attrs["name"] = "albert_backbone"
            layers = handle.create_group("layers")
            for group_name, layer_name, count in _layout(config):
                group = layers.create_group(group_name)
                sublayers = [("", layer_name, count)]
                if count is None:   # A TransformerEncoder: its own (empty) vars and its sub-layers.
                    sublayers = [("", layer_name, 0)] + list(_ENCODER_SUBLAYERS)
                for sub_path, sub_name, sub_count in sublayers:
                    target = group.require_group(sub_path) if sub_path else group
                    vars_group = target.create_group("vars")
                    vars_group.attrs["name"] = sub_name
                    for i in range(sub_count):
                        key = f"{layer_name}/{sub_path + '/' if sub_path else ''}vars/{i}"
                        shape, link, producer = values[key]
                        value = producer() if link is None else link.transform.from_tf1(producer(), heads)
                        value = np.asarray(value, np.float32)
                        if value.shape != tuple(shape):
                            raise InputError(f"`{key}`: shape {list(value.shape)}, expected {list(shape)}.")
                        vars_group.create_dataset(str(i), data=value)
                        written.add(key)
    unwritten = sorted(set(values) - written)
    if unwritten:
        raise InputError(f"keras-hub layout has no place for: {', '.join(unwritten)}.")
    fileio.write_text_atomic(os.path.join(directory, CONFIG), json.dumps(backbone, indent=4) + "\n")
    fileio.write_text_atomic(os.path.join(directory, METADATA), json.dumps({
        "keras_version": keras.__version__,
        "parameter_count": int(sum(int(np.prod(shape)) for shape, _, _ in values.values())),
        "tasks": ["MaskedLM", "TextClassifier"],
    }, indent=4) + "\n")
    if spm_model_file:
        os.makedirs(os.path.join(directory, os.path.dirname(SPM)), exist_ok=True)
        fileio.copy_atomic(spm_model_file, os.path.join(directory, SPM))
        fileio.write_text_atomic(os.path.join(directory, TOKENIZER), json.dumps({
            "module": "keras_hub.src.models.albert.albert_tokenizer",
            "class_name": "AlbertTokenizer",
            "config": {"name": "albert_tokenizer", "trainable": True,
                       "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "int32"},
                                 "registered_name": None},
                       "config_file": TOKENIZER, "proto": None, "sequence_length": None,
                       "add_bos": False, "add_eos": False},
            "registered_name": "keras_hub>AlbertTokenizer",
        }, indent=4) + "\n")


def write_classifier_task(directory, config, output_weights, output_bias, spm_written):
    """Writes keras-hub's `AlbertTextClassifier` task files (`task.json`, `task.weights.h5`, and with the tokenizer
    `preprocessor.json`) beside a backbone preset `write` made, from the original classifier head.

    Args:
        directory: str, the preset directory (its `config.json` is the backbone's).
        config: `AlbertConfig`.
        output_weights: array `[num_classes, H]` (the original's root-scope `output_weights`).
        output_bias: array `[num_classes]`.
        spm_written: bool, whether the preset has the tokenizer (then the task has its preprocessor).
    """
    num_classes = int(output_weights.shape[0])
    preprocessor = None
    if spm_written:
        tokenizer = foreign.read_json(os.path.join(directory, TOKENIZER))
        preprocessor = {
            "module": "keras_hub.src.models.albert.albert_text_classifier_preprocessor",
            "class_name": "AlbertTextClassifierPreprocessor",
            "config": {"name": "albert_text_classifier_preprocessor", "trainable": True,
                       "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
                                 "registered_name": None},
                       "tokenizer": tokenizer, "config_file": PREPROCESSOR,
                       "sequence_length": min(512, config.max_position_embeddings), "truncate": "round_robin"},
            "registered_name": "keras_hub>AlbertTextClassifierPreprocessor"}
        fileio.write_text_atomic(os.path.join(directory, PREPROCESSOR), json.dumps(preprocessor, indent=4) + "\n")
    task = {"module": "keras_hub.src.models.albert.albert_text_classifier", "class_name": "AlbertTextClassifier",
            "config": {"backbone": backbone_config(config), "preprocessor": preprocessor,
                       "name": "albert_text_classifier", "num_classes": num_classes, "activation": "linear",
                       "dropout": 0.1},
            "registered_name": "keras_hub>AlbertTextClassifier"}
    with fileio.atomic_path(os.path.join(directory, TASK_WEIGHTS)) as tmp:
        with h5py.File(tmp, "w") as handle:
            handle.create_group("vars").attrs["name"] = "albert_text_classifier"
            dense = handle.create_group("layers/dense/vars")
            dense.attrs["name"] = "logits"
            dense.create_dataset("0", data=np.asarray(output_weights, np.float32).T)
            dense.create_dataset("1", data=np.asarray(output_bias, np.float32))
            handle.create_group("layers/dropout/vars").attrs["name"] = "output_dropout"
    fileio.write_text_atomic(os.path.join(directory, TASK), json.dumps(task, indent=4) + "\n")
