"""Hugging Face transformers' ALBERT directories: `config.json` (`model_type: albert`), safetensors, `spiece.model`.

Names follow transformers' `modeling_albert.py` (`AlbertModel`, `AlbertForPreTraining`, `AlbertForMaskedLM`,
`AlbertForSequenceClassification`, `AlbertForQuestionAnswering`, `AlbertForMultipleChoice`), as its
`load_tf_weights_in_albert` maps the original names: `torch.nn.Linear` weights are the transposed kernels,
`sop_classifier.classifier.weight`, `classifier.weight` and `qa_outputs.weight` keep the original's
`[num_outputs, H]` `output_weights` layout. Encoder names may carry the `albert.` prefix of the head models or
not (a bare `AlbertModel`). Pickled PyTorch files are never opened: they can run code when loaded.
"""

import json
import os

import numpy as np
from absl import logging

from albert_tf import fileio, registry
from albert_tf.checkpoints import foreign, hf_tf
from albert_tf.checkpoints.foreign import TRANSPOSE, Link
from albert_tf.checkpoints.safetensors_io import SafetensorsFile, write_safetensors
from albert_tf.errors import InputError

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
SPM = "spiece.model"
PREFIX = "albert."
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
PICKLE_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
FLAX = "flax_model.msgpack"

# HF `hidden_act` -> the original's; HF `gelu` is the erf form, `gelu_new` the tanh form the original uses.
_ACT_FROM_HF = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu_fast": "gelu", "gelu": "gelu",
                "relu": "relu", "tanh": "tanh", "linear": "linear"}
_ACT_TO_HF = {"gelu": "gelu_new", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_COPIED = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
           "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_dropout_prob",
           "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size", "initializer_range")
_EXTRA = ("down_scale_factor", "net_structure_type", "gap_size", "num_memory_blocks")
# transformers' `AlbertConfig` defaults, for keys a `config.json` leaves out.
_HF_DEFAULTS = dict(vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12, num_hidden_groups=1,
                    num_attention_heads=64, intermediate_size=16384, inner_group_num=1, hidden_act="gelu_new",
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=512,
                    type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12)

_BLOCK = {
    "attention_1/self/query/kernel": ("attention.query.weight", TRANSPOSE),
    "attention_1/self/query/bias": ("attention.query.bias", foreign.IDENTITY),
    "attention_1/self/key/kernel": ("attention.key.weight", TRANSPOSE),
    "attention_1/self/key/bias": ("attention.key.bias", foreign.IDENTITY),
    "attention_1/self/value/kernel": ("attention.value.weight", TRANSPOSE),
    "attention_1/self/value/bias": ("attention.value.bias", foreign.IDENTITY),
    "attention_1/output/dense/kernel": ("attention.dense.weight", TRANSPOSE),
    "attention_1/output/dense/bias": ("attention.dense.bias", foreign.IDENTITY),
    "LayerNorm/gamma": ("attention.LayerNorm.weight", foreign.IDENTITY),
    "LayerNorm/beta": ("attention.LayerNorm.bias", foreign.IDENTITY),
    "ffn_1/intermediate/dense/kernel": ("ffn.weight", TRANSPOSE),
    "ffn_1/intermediate/dense/bias": ("ffn.bias", foreign.IDENTITY),
    "ffn_1/intermediate/output/dense/kernel": ("ffn_output.weight", TRANSPOSE),
    "ffn_1/intermediate/output/dense/bias": ("ffn_output.bias", foreign.IDENTITY),
    "LayerNorm_1/gamma": ("full_layer_layer_norm.weight", foreign.IDENTITY),
    "LayerNorm_1/beta": ("full_layer_layer_norm.bias", foreign.IDENTITY),
}
_BLOCK = {suffix: (PREFIX + "encoder.albert_layer_groups.{g}.albert_layers.{k}." + name, transform)
          for suffix, (name, transform) in _BLOCK.items()}
_PROJECTION = (PREFIX + "encoder.embedding_hidden_mapping_in.weight",
               PREFIX + "encoder.embedding_hidden_mapping_in.bias")
POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")
# Buffers some transformers versions save with the weights.
_BUFFERS = (PREFIX + "embeddings.position_ids", PREFIX + "embeddings.token_type_ids")
_DECODER_WEIGHT, _DECODER_BIAS = "predictions.decoder.weight", "predictions.decoder.bias"


def head_links(architecture=None):
    """The transformers links of the registered heads (`albert_tf.registry`), each TF1 and each transformers
    name once. transformers gives different heads the same names (`classifier.weight`: sequence classification,
    multiple choice, token classification; `config.json`'s `architectures` tells them apart), so the heads of the
    kind whose `hf_architecture` is `architecture` come first, then the others by kind order."""
    kinds = sorted(registry.kinds(), key=lambda kind: kind.hf_architecture != architecture)
    result, tf1_taken, foreign_taken = [], set(), set()
    for head in (head for kind in kinds for head in kind.heads):
        for link in head.hf_links:
            if link.tf1 not in tf1_taken and link.foreign not in foreign_taken:
                result.append(link)
                tf1_taken.add(link.tf1)
                foreign_taken.add(link.foreign)
    return result


def _head_roots():
    """First parts of the head models' names (`predictions`, `classifier`, ...): they carry no `albert.`."""
    return {link.foreign.split(".")[0] for head in registry.heads() for link in head.hf_links}


def links(config, architecture=None):
    """Every TF1 name <-> HF name (with the `albert.` prefix) link for `config`, registered heads included (those
    of the transformers class `architecture` first, see `head_links`)."""
    result = [
        Link("bert/embeddings/word_embeddings", PREFIX + "embeddings.word_embeddings.weight"),
        Link("bert/embeddings/token_type_embeddings", PREFIX + "embeddings.token_type_embeddings.weight"),
        Link("bert/embeddings/position_embeddings", PREFIX + "embeddings.position_embeddings.weight"),
        Link("bert/embeddings/LayerNorm/gamma", PREFIX + "embeddings.LayerNorm.weight"),
        Link("bert/embeddings/LayerNorm/beta", PREFIX + "embeddings.LayerNorm.bias"),
    ]
    if config.embedding_size != config.hidden_size:
        result += [Link(foreign.PROJECTION[0], _PROJECTION[0], TRANSPOSE), Link(foreign.PROJECTION[1], _PROJECTION[1])]
    result += foreign.block_links(config, _BLOCK)
    result += [Link(POOLER[0], PREFIX + "pooler.weight", TRANSPOSE), Link(POOLER[1], PREFIX + "pooler.bias")]
    return result + head_links(architecture)


# --- detection and config -------------------------------------------------------------------------------------

def refuse_pickle(path):
    """Raises for a pickled PyTorch (or other non-safetensors) weight file: loading a pickle can run code."""
    raise InputError(
        f"`{path}` is a pickled PyTorch checkpoint; albert_tf never unpickles downloaded files (unpickling can "
        "run arbitrary code). Use the `model.safetensors` (or transformers 4.x TensorFlow `tf_model.h5`) file that "
        "Hugging Face repositories carry, or convert "
        "the checkpoint to safetensors in a trusted environment (e.g. `transformers` "
        "`model.save_pretrained(dir, safe_serialization=True)`), then pass that directory.")


def is_hf_dir(directory):
    """True when `directory/config.json` says `model_type: albert` (or any transformers `model_type`)."""
    config = foreign.read_json(os.path.join(directory, CONFIG)) if os.path.isfile(os.path.join(directory, CONFIG)) else None
    return isinstance(config, dict) and "model_type" in config


def check_model_type(directory):
    """Raises unless the HF `config.json` says `model_type: albert`."""
    path = os.path.join(directory, CONFIG)
    model_type = foreign.read_json(path).get("model_type")
    if model_type != "albert":
        raise InputError(f"`{path}` has `model_type: {model_type!r}`; expected `albert`.")


def architecture_of(directory):
    """The first of `config.json`'s `architectures` (the transformers class that wrote it, `TF`/`Flax` taken off),
    or None; a class albert_tf does not read is refused naming it (its head would be read as another's)."""
    architectures = foreign.read_json(os.path.join(directory, CONFIG)).get("architectures")
    if not (isinstance(architectures, list) and architectures):
        return None
    name = str(architectures[0])
    for framework in ("TF", "Flax"):
        if name.startswith(framework + "Albert"):
            name = name[len(framework):]
    known = [arch for _, arch in _architectures()]
    if name not in known:
        raise InputError(f"`{os.path.join(directory, CONFIG)}` names architectures `{architectures[0]}`, a class "
                         f"albert_tf does not read; expected one of {', '.join(known)}.")
    return name


def architecture_kind(architecture):
    """The registered model kind whose transformers class is `architecture`, or None (`AlbertForMaskedLM`)."""
    return next((kind for kind in registry.kinds() if kind.hf_architecture == architecture), None)


def config_dict(directory):
    """The `AlbertConfig` fields for the HF directory's `config.json`."""
    check_model_type(directory)
    path = os.path.join(directory, CONFIG)
    hf = dict(_HF_DEFAULTS, **foreign.read_json(path))
    act = hf["hidden_act"]
    if act not in _ACT_FROM_HF:
        raise InputError(f"`{path}`: `hidden_act={act!r}` has no counterpart in the original ALBERT "
                         f"(supported: {', '.join(_ACT_FROM_HF)}).")
    if act == "gelu":
        logging.warning("`%s` says `hidden_act: gelu` (erf GELU in transformers, as in the v1 configs there); "
                        "ALBERT's weights were trained with the tanh GELU the original code uses, which is used "
                        "here (transformers#2395).", path)
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise InputError(f"`{path}`: `position_embedding_type={hf['position_embedding_type']!r}`; the original "
                         "ALBERT has absolute position embeddings only.")
    eps = hf["layer_norm_eps"]
    if not np.isclose(eps, 1e-12, rtol=0, atol=1e-13):
        raise InputError(f"`{path}`: `layer_norm_eps={eps}`; the original ALBERT uses 1e-12.")
    config = {key: hf[key] for key in _COPIED}
    config["hidden_act"] = _ACT_FROM_HF[act]
    config.update((key, hf[key]) for key in _EXTRA if key in hf)
    return config


def labels_of(directory, num_labels=None):
    """The label names of a Hugging Face directory's `config.json` `id2label`, in id order.

    None when it has none, when they are transformers' defaults (`LABEL_<i>`), when the ids are not 0..n-1, or
    when there are not `num_labels` of them (`num_labels` None: any number).
    """
    id2label = foreign.read_json(os.path.join(directory, CONFIG)).get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        return None
    try:
        by_id = {int(key): str(value) for key, value in id2label.items()}
    except (TypeError, ValueError):
        return None
    labels = [by_id.get(i) for i in range(len(by_id))]
    if None in labels or (num_labels is not None and len(labels) != int(num_labels)):
        return None
    if labels == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    return labels


def to_hf_config(config, architecture, num_labels=None, labels=None):
    """transformers' `AlbertConfig` JSON for our `config`; `id2label`/`label2id` from `labels` (names of the
    `num_labels` outputs) or transformers' defaults `LABEL_<i>`."""
    if config.hidden_act not in _ACT_TO_HF:
        raise InputError(f"`hidden_act={config.hidden_act!r}` has no transformers counterpart.")
    hf = {"architectures": [architecture], "model_type": "albert"}
    hf.update((key, getattr(config, key)) for key in _COPIED)
    hf.update(hidden_act=_ACT_TO_HF[config.hidden_act], layer_norm_eps=1e-12, classifier_dropout_prob=0.1,
              position_embedding_type="absolute", pad_token_id=0, bos_token_id=2, eos_token_id=3)
    hf.update((key, getattr(config, key)) for key in _EXTRA if hasattr(config, key))
    if num_labels is not None:
        names = list(labels) if labels is not None and len(labels) == num_labels else [
            f"LABEL_{i}" for i in range(num_labels)]
        hf["id2label"] = {str(i): name for i, name in enumerate(names)}
        hf["label2id"] = {name: i for i, name in enumerate(names)}
    return hf


# --- reading ----------------------------------------------------------------------------------------------------

def weight_files(directory):
    """The safetensors files of an HF directory (one, or the shards of `model.safetensors.index.json`)."""
    index = os.path.join(directory, INDEX)
    if os.path.isfile(index):
        data = foreign.read_json(index)
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise InputError(f"`{index}` has no `weight_map`.")
        files = sorted(set(weight_map.values()))
        for name in files:
            if os.path.basename(name) != name:
                raise InputError(f"`{index}` names shard `{name}` outside its directory.")
        return [os.path.join(directory, name) for name in files], weight_map
    single = os.path.join(directory, WEIGHTS)
    if os.path.isfile(single):
        return [single], None
    if os.path.isfile(os.path.join(directory, hf_tf.WEIGHTS)):
        return [os.path.join(directory, hf_tf.WEIGHTS)], None
    pickles = [name for name in sorted(os.listdir(directory))
               if name in PICKLE_NAMES or name.endswith(PICKLE_SUFFIXES)]
    if pickles:
        refuse_pickle(os.path.join(directory, pickles[0]))
    if os.path.isfile(os.path.join(directory, FLAX)):
        raise InputError(f"`{os.path.join(directory, FLAX)}`: Flax weights are not read; save the model with "
                         "transformers as safetensors (`save_pretrained(dir, safe_serialization=True)`).")
    raise FileNotFoundError(f"Hugging Face directory `{directory}` has neither `{WEIGHTS}`, `{INDEX}` nor "
                            f"`{hf_tf.WEIGHTS}`.")


def is_tf_weights(directory):
    """True when the directory's weights are transformers 4.x TensorFlow `tf_model.h5` (no safetensors)."""
    files, _ = weight_files(directory)
    return os.path.basename(files[0]) == hf_tf.WEIGHTS


def _safetensors_tensors(directory):
    """`(source path, shapes, read)` of the directory's safetensors under transformers' names (with `albert.`)."""
    files, weight_map = weight_files(directory)
    head_roots = _head_roots()
    tensors, where = {}, {}
    for path in files:
        shard = SafetensorsFile(path)
        for name, shape in shard.shapes.items():
            key = name if name.startswith(PREFIX) or name.split(".")[0] in head_roots else PREFIX + name
            if key in tensors:
                raise InputError(f"`{path}` holds `{name}` twice (with and without the `albert.` prefix, or in "
                                 "two shards).")
            tensors[key], where[key] = shape, (shard, name)
    if weight_map is not None:
        for name, file_name in weight_map.items():
            key = name if name.startswith(PREFIX) or name.split(".")[0] in head_roots else PREFIX + name
            if key not in where or os.path.basename(where[key][0].path) != file_name:
                raise InputError(f"`{os.path.join(directory, INDEX)}` lists `{name}` in `{file_name}`, which "
                                 "does not hold it.")

    def read(key):
        shard, name = where[key]
        return shard.read(name)

    source = files[0] if len(files) == 1 else os.path.join(directory, INDEX)
    return source, tensors, read


def open_reader(directory, config):
    """A `MappedReader` of the HF directory's weights (safetensors, or transformers 4.x TensorFlow `tf_model.h5`)
    under the original names."""
    if is_tf_weights(directory):
        source, tensors, read, _ = hf_tf.open_tensors(directory)
    else:
        source, tensors, read = _safetensors_tensors(directory)
    skipped = [name for name in _BUFFERS if name in tensors]
    all_links = links(config, architecture_of(directory))
    if config.embedding_size == config.hidden_size and _PROJECTION[0] in tensors:
        # transformers always projects E -> H; our writer stores the identity there.
        foreign.check_identity_projection(source, read(_PROJECTION[0]), read(_PROJECTION[1]), _PROJECTION[0])
        skipped += list(_PROJECTION)
    tensors_for_links, renamed = dict(tensors), {}
    if _DECODER_WEIGHT in tensors:
        # Tied to the word embeddings in transformers (`_tied_weights_keys`), as in the original.
        if not np.array_equal(read(_DECODER_WEIGHT), read(PREFIX + "embeddings.word_embeddings.weight")):
            raise InputError(f"`{source}`: `{_DECODER_WEIGHT}` differs from the word embeddings; the original "
                             "ALBERT ties the MLM output matrix to them.")
        skipped.append(_DECODER_WEIGHT)
    if _DECODER_BIAS in tensors:
        if "predictions.bias" in tensors:
            if not np.array_equal(read(_DECODER_BIAS), read("predictions.bias")):
                raise InputError(f"`{source}`: `{_DECODER_BIAS}` differs from `predictions.bias` (tied in "
                                 "transformers).")
            skipped.append(_DECODER_BIAS)
        else:
            tensors_for_links["predictions.bias"] = tensors_for_links.pop(_DECODER_BIAS)
            renamed["predictions.bias"] = _DECODER_BIAS
    entries = foreign.build_entries(
        source, all_links, tensors_for_links, lambda name: read(renamed.get(name, name)), "Hugging Face ALBERT",
        f"Expected the weights of transformers' {' or '.join(name for _, name in _architectures())} for "
        f"this config.json ({config.num_hidden_groups} groups x {config.inner_group_num} inner groups).",
        skipped=set(skipped))
    foreign.log_skipped(source, skipped)
    # AlbertForMaskedLM and AlbertForQuestionAnswering are built without the pooler.
    may_lack = set(POOLER) if not any(name in entries for name in POOLER) else set()
    reader = foreign.MappedReader(source, entries, skipped, may_lack)
    reader.architecture = architecture_of(directory)
    return reader


# --- writing ----------------------------------------------------------------------------------------------------

# transformers' `AlbertForMaskedLM` (read, never written: no model kind has the MLM head alone).
_MASKED_LM = (frozenset({"mlm"}), "AlbertForMaskedLM")


def _architectures():
    """`(head names, transformers class)` of every registered kind that has one, and `AlbertForMaskedLM`."""
    known = [(frozenset(head.name for head in kind.heads), kind.hf_architecture)
             for kind in registry.kinds() if kind.hf_architecture]
    return known + [_MASKED_LM]


def architecture(components):
    """The transformers class for a model with these table components (its kind's `hf_architecture`)."""
    heads = frozenset(components) - {"encoder"}
    for needed, name in _architectures():
        if heads == needed:
            return name
    raise InputError(f"No transformers ALBERT class has the heads {sorted(heads)} (the SQuAD 2.0 head of the "
                     "original has no transformers counterpart). Convert with `--model=encoder` to write the "
                     "encoder alone.")


def write(tf1_values, config, components, directory, num_labels=None, labels=None, tensorflow=False):
    """Writes `config.json` and `model.safetensors` (or, with `tensorflow`, transformers 4.x's TensorFlow
    `tf_model.h5`) of a transformers model into `directory`.

    Args:
        tf1_values: `OrderedDict` TF1 name -> `(shape, producer)`, the model's variables in the original layout.
        config: `AlbertConfig`.
        components: the model's table components (`encoder`, `mlm`, ...), choosing the transformers class.
        directory: str, existing output directory.
        num_labels: int or None, rows of a classifier head.
        labels: optional names of those rows (`config.json`'s `id2label`).
        tensorflow: bool, write `tf_model.h5` for transformers 4.x `TFAlbert*` classes instead of safetensors.

    Returns:
        str, the transformers class written.
    """
    arch = architecture(components)
    by_tf1 = {link.tf1: link for link in links(config, arch)}
    heads = config.num_attention_heads
    entries = []
    for name, (shape, producer) in tf1_values.items():
        link = by_tf1[name]
        entries.append((link.foreign, link.transform.foreign_shape(shape, heads), np.float32,
                        _producer(link, producer, heads)))
    if config.embedding_size == config.hidden_size:
        size = config.hidden_size
        entries.insert(5, (_PROJECTION[0], (size, size), np.float32, lambda: np.eye(size, dtype=np.float32)))
        entries.insert(6, (_PROJECTION[1], (size,), np.float32, lambda: np.zeros(size, np.float32)))
    if "mlm" in components:
        values = dict(tf1_values)
        entries.append((_DECODER_WEIGHT, values["bert/embeddings/word_embeddings"][0], np.float32,
                        values["bert/embeddings/word_embeddings"][1]))
        entries.append((_DECODER_BIAS, values["cls/predictions/output_bias"][0], np.float32,
                        values["cls/predictions/output_bias"][1]))
    if tensorflow:
        hf_tf.write(os.path.join(directory, hf_tf.WEIGHTS), entries, arch)
    else:
        write_safetensors(os.path.join(directory, WEIGHTS), entries, metadata={"format": "pt"})
    fileio.write_text_atomic(os.path.join(directory, CONFIG),
                             json.dumps(to_hf_config(config, arch, num_labels, labels), indent=2, sort_keys=True) + "\n")
    return arch


def _producer(link, producer, heads):
    return lambda: link.transform.from_tf1(producer(), heads)
