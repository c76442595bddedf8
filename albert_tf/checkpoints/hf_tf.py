"""transformers 4.x TensorFlow weights: `tf_model.h5`, as `TFAlbert*.save_pretrained` wrote it.

transformers v5 removed its TensorFlow classes; the files its 4.x `TFAlbertModel`, `TFAlbertForPreTraining`,
`TFAlbertForMaskedLM`, `TFAlbertForSequenceClassification`, `TFAlbertForTokenClassification`,
`TFAlbertForQuestionAnswering` and `TFAlbertForMultipleChoice` wrote stay. `tf_model.h5` is Keras 2's HDF5
`save_weights` layout: root attribute `layer_names` (the model's top layers: `albert`, `predictions`,
`sop_classifier`, `classifier`, `qa_outputs`, dropouts), and per layer a group whose attribute `weight_names` lists
its variables, stored as datasets under those names, e.g. `tf_albert_for_sequence_classification/albert/encoder/`
`albert_layer_groups_._0/albert_layers_._0/attention/query/kernel:0`.
It holds plain arrays: h5py reads them and runs no code.

Names map one to one to transformers' PyTorch names (`modeling_tf_pytorch_utils` does the same): the first part
(the model's name) is dropped, `_._N` is `.N`, `kernel` is the transposed `weight` of a `torch.nn.Linear`,
`gamma`/`beta` and `embeddings` are `weight`/`bias` and `weight`. So a `tf_model.h5` is read as the same tensors a
`model.safetensors` holds and `hf.open_reader` maps them to the original names. One difference: the masked-LM
head of the TF classes adds `predictions/decoder/bias` to the logits (`TFAlbertMLMHead.call`) and never uses its
`predictions/bias`; the former is read as the output bias.
"""

import os
import re

import h5py
import keras
import numpy as np
from absl import logging

from albert_tf import fileio
from albert_tf.errors import InputError

WEIGHTS = "tf_model.h5"
_DECODER_BIAS_TF = "predictions/decoder/bias"
_UNUSED_BIAS_TF = "predictions/bias"
_LAST = {"kernel": "weight", "gamma": "weight", "beta": "bias", "embeddings": "weight", "weight": "weight",
         "bias": "bias"}
# The `name` of each TF class (Keras 2 snake-cases the class name): the first part of every variable name.
MODEL_NAMES = {
    "AlbertModel": "tf_albert_model", "AlbertForPreTraining": "tf_albert_for_pre_training",
    "AlbertForMaskedLM": "tf_albert_for_masked_lm",
    "AlbertForSequenceClassification": "tf_albert_for_sequence_classification",
    "AlbertForTokenClassification": "tf_albert_for_token_classification",
    "AlbertForQuestionAnswering": "tf_albert_for_question_answering",
    "AlbertForMultipleChoice": "tf_albert_for_multiple_choice",
}
_EMBEDDINGS = "albert/embeddings/"
# transformers builds these classes' encoder without the pooler (`add_pooling_layer=False`): none is written.
_NO_POOLER = ("AlbertForMaskedLM", "AlbertForTokenClassification", "AlbertForQuestionAnswering")


def to_torch_name(tf_name):
    """`(torch name, transposed)` for a TF variable name without the model's name (`albert/pooler/kernel:0`)."""
    name = re.sub(r":\d+$", "", tf_name)
    if name == _DECODER_BIAS_TF:
        return "predictions.bias", False
    parts = name.split("/")
    last = parts[-1]
    if last not in _LAST:
        return None, False
    path = ".".join(parts[:-1])
    path = re.sub(r"_\._(\d+)", r".\1", path)
    return f"{path}.{_LAST[last]}", last == "kernel"


def to_tf_name(torch_name):
    """`(TF variable name without the model's name, with `:0`, transposed)` of a torch name: the inverse of
    `to_torch_name` (the `Embedding` tables are `embeddings`, the word embeddings `weight`)."""
    path, last = torch_name.rsplit(".", 1)
    path = re.sub(r"/(\d+)(?=/|$)", r"_._\1", path.replace(".", "/"))
    if "LayerNorm" in path or path.endswith("layer_norm"):
        return f"{path}/{'beta' if last == 'bias' else 'gamma'}:0", False
    if last == "bias":
        return f"{path}/bias:0", False
    if path.endswith("_embeddings"):
        return f"{path}/{'weight' if path.endswith('word_embeddings') else 'embeddings'}:0", False
    return f"{path}/kernel:0", True


def _weight_names(path, handle):
    """`(layer group, weight name)` of every variable, in file order; raises unless Keras 2's HDF5 layout."""
    layer_names = handle.attrs.get("layer_names")
    if layer_names is None:
        raise InputError(f"`{path}` is not a Keras 2 HDF5 weights file (transformers' `tf_model.h5`): it has no "
                         "`layer_names` attribute.")
    result = []
    for layer in layer_names:
        layer = layer.decode("utf-8") if isinstance(layer, bytes) else str(layer)
        group = handle.get(layer)
        if group is None:
            raise InputError(f"`{path}` lists layer `{layer}` but has no group of that name (damaged file?).")
        for name in group.attrs.get("weight_names", []):
            result.append((layer, name.decode("utf-8") if isinstance(name, bytes) else str(name)))
    return result


def open_tensors(directory):
    """transformers' torch names of the `tf_model.h5` variables, in torch layouts.

    Returns:
        `(path, shapes, read, unused)`: `shapes` torch name -> shape, `read(torch name)` -> array,
        `unused` the TF names that no model output depends on (`predictions/bias`).
    """
    path = os.path.join(directory, WEIGHTS)
    try:
        handle = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"Cannot open `{path}` as an HDF5 weights file (truncated or damaged?): {e}") from None
    shapes, where, unused = {}, {}, []
    for layer, weight_name in _weight_names(path, handle):
        relative = weight_name.split("/", 1)[1] if "/" in weight_name else weight_name
        if re.sub(r":\d+$", "", relative) == _UNUSED_BIAS_TF:
            unused.append(relative)
            continue
        torch_name, transposed = to_torch_name(relative)
        if torch_name is None:
            raise InputError(f"`{path}`: `{weight_name}` (layer `{layer}`) is no variable of transformers' "
                             "TFAlbert classes.")
        if torch_name in where:
            continue   # The word embeddings are listed again under the tied `predictions` layer.
        dataset = handle[layer][weight_name]
        shape = tuple(dataset.shape)
        shapes[torch_name] = tuple(reversed(shape)) if transposed else shape
        where[torch_name] = (f"{layer}/{weight_name}", transposed)

    def read(torch_name):
        dataset_path, transposed = where[torch_name]
        dataset = handle[dataset_path]
        if dataset.dtype.kind != "f":
            raise InputError(f"`{path}`: `{dataset_path}` has dtype {dataset.dtype}; expected floats.")
        try:
            value = np.asarray(dataset[()])
        except OSError as e:
            raise InputError(f"Cannot read `{dataset_path}` from `{path}` (truncated or damaged?): {e}") from None
        return value.T if transposed else value

    if unused:
        logging.info("`%s`: %s is not used by transformers' TFAlbertMLMHead (it adds `%s`); not read.", path,
                     unused[0], _DECODER_BIAS_TF)
    return path, shapes, read, unused


def write(path, entries, architecture):
    """Writes `tf_model.h5` as transformers 4.x `TF<architecture>.save_pretrained` does.

    Args:
        path: str, the output file.
        entries: list of `(torch name, torch shape, dtype, producer)` (`hf.write`'s safetensors entries).
        architecture: str, transformers' class without `TF` (`AlbertForSequenceClassification`).
    """
    model_name = MODEL_NAMES[architecture]
    layers = {}
    for torch_name, _, dtype, producer in entries:
        if torch_name == "predictions.decoder.weight":
            continue   # The TF head multiplies by the word embeddings themselves.
        if architecture in _NO_POOLER and torch_name.startswith("albert.pooler."):
            continue
        tf_name, transposed = to_tf_name(torch_name)
        layers.setdefault(tf_name.split("/")[0], []).append((tf_name, transposed, dtype, producer))
    if "predictions" in layers:
        # Keras 2 lists the tied embeddings among the MLM head's weights too.
        layers["predictions"] += [entry for entry in layers["albert"] if entry[0].startswith(_EMBEDDINGS)]
    with fileio.atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as handle:
            handle.attrs["backend"] = "tensorflow"
            handle.attrs["keras_version"] = keras.__version__
            handle.attrs["layer_names"] = [name.encode("utf-8") for name in layers]
            for layer, weights in layers.items():
                group = handle.create_group(layer)
                names = [f"{model_name}/{tf_name}" for tf_name, _, _, _ in weights]
                group.attrs["weight_names"] = [name.encode("utf-8") for name in names]
                for name, (_, transposed, dtype, producer) in zip(names, weights):
                    value = np.asarray(producer(), dtype)
                    group.create_dataset(name, data=value.T if transposed else value)
