"""Keras' LoRA on the ALBERT models: `enable_lora`, adapters saved and loaded on their own, and a merged copy for
export.

The adapters are Keras' own (`keras.layers.Dense.enable_lora`: `kernel + (alpha / rank) * A @ B`, `B` starting
at zero so that the outputs do not change until trained), and so is their merge (`Dense.save_own_variables`).
The encoder's layers read the public `Dense.kernel`, which adds the adapter in, once per forward (a quantized
`Dense` is called, Keras' int8 matmul adding its adapter); on ALBERT one adapter on a shared block serves every
layer that applies it. What Keras lacks and this module adds: choosing the targets by name with the rest of
the encoder frozen, and saving the adapters on their own.
The meaning of `enable_lora(rank)` is keras-hub's `Backbone.enable_lora`: every layer of the encoder is frozen,
then the target `Dense` layers (the query and value projections by default) get an adapter and train, with
their bias; a task model's head stays trainable.
"""

import os

import h5py
import keras
import numpy as np

from albert_tf.errors import InputError
from albert_tf.layers.base import sublayers
from albert_tf.options import LORA_DEFAULT_TARGETS as DEFAULT_TARGETS
from albert_tf.options import LORA_TARGET_NAMES as TARGET_NAMES


def enable_lora(encoder, rank, target_names=None, lora_alpha=None):
    """Freezes `encoder` (an `AlbertModel`) and adds rank-`rank` adapters to its `Dense` layers named in
    `target_names` (default `("query", "value")`); returns the layers that got one."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputError(f"`rank` must be a positive int. Received: `rank={rank!r}`.")
    hidden_size = encoder.config.hidden_size
    if rank > hidden_size:
        # Each adapter pair would hold more weights than its kernel (hidden_size rows): not a low-rank update.
        raise InputError(f"`lora_rank` ({rank}) is larger than the hidden size ({hidden_size}): LoRA's adapters "
                         f"would hold more weights than the kernels they adapt; pick a rank below {hidden_size} "
                         "(4 to 64 are usual), or fine-tune every weight (lora_rank=0).")
    targets = DEFAULT_TARGETS if target_names is None else tuple(target_names)
    unknown = sorted(set(targets) - set(TARGET_NAMES))
    if unknown or not targets:
        raise InputError(f"`target_names` must name some of the encoder's dense layers {list(TARGET_NAMES)}. "
                         f"Received: {list(targets)}.")
    layers = sublayers(encoder)
    if any(getattr(layer, "lora_enabled", False) for layer in layers):
        raise InputError("LoRA is already enabled on this model.")
    encoder.trainable = True
    for layer in layers:
        layer.trainable = False
    enabled = []
    for layer in layers:
        if isinstance(layer, keras.layers.Dense) and layer.name in targets:
            layer.trainable = True
            layer.enable_lora(rank, lora_alpha=lora_alpha)
            enabled.append(layer)
    return enabled


def lora_layers(model):
    """The `Dense` layers of `model` that have a LoRA adapter."""
    return [layer for layer in sublayers(model) if getattr(layer, "lora_enabled", False)]


def save_lora_weights(model, filepath):
    """Writes `model`'s trainable weights (the adapters, the target layers' biases and a task model's head) to
    the HDF5 file `filepath`, each under its Keras variable path, with the LoRA rank as an attribute."""
    layers = lora_layers(model)
    if not layers:
        raise InputError("The model has no LoRA adapters: call `enable_lora(rank)` first.")
    if not str(filepath).endswith(".lora.h5"):
        raise InputError(f"`filepath` must end in `.lora.h5`. Received: {filepath}.")
    temp = f"{filepath}.tmp-{os.getpid()}"
    with h5py.File(temp, "w") as f:
        f.attrs["lora_rank"] = layers[0].lora_rank
        for variable in model.trainable_variables:
            f.create_dataset(variable.path, data=keras.ops.convert_to_numpy(variable))
    os.replace(temp, filepath)


def load_lora_weights(model, filepath):
    """Reads a `save_lora_weights` file into `model`, which must have LoRA enabled with the same rank and the
    same trainable weights (by path and shape)."""
    layers = lora_layers(model)
    if not layers:
        raise InputError("The model has no LoRA adapters: call `enable_lora(rank)` with the file's rank first.")
    with h5py.File(filepath, "r") as f:
        rank = int(f.attrs["lora_rank"])
        if rank != layers[0].lora_rank:
            raise InputError(f"{filepath}: LoRA rank {rank}, the model's is {layers[0].lora_rank}.")
        stored = {}
        f.visititems(lambda name, item: stored.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset)
                     else None)
    wanted = {variable.path: variable for variable in model.trainable_variables}
    if sorted(stored) != sorted(wanted):
        missing, extra = sorted(set(wanted) - set(stored)), sorted(set(stored) - set(wanted))
        raise InputError(f"{filepath}: the adapters do not fit this model (missing: {missing}; not in the "
                         f"model: {extra}).")
    for path, variable in wanted.items():
        if tuple(stored[path].shape) != tuple(variable.shape):
            raise InputError(f"{filepath}: `{path}` has shape {stored[path].shape}, the model's is "
                             f"{tuple(variable.shape)}.")
        variable.assign(np.asarray(stored[path]))


def merged_copy(model):
    """`model` when it has no adapters; otherwise a new model of the same class and config, without adapters,
    whose kernels are the adapted ones (`kernel + (alpha / rank) * A @ B`): what the exports write.

    The merge is Keras' own: each layer's `save_own_variables` (which writes a LoRA `Dense` kernel with its
    adapter merged in, re-quantized when the layer is int8) read by the new model's layer of the same place."""
    if not lora_layers(model):
        return model
    copy = model.__class__.from_config(model.get_config())
    sources, targets = [model] + sublayers(model), [copy] + sublayers(copy)
    if [type(layer) for layer in sources] != [type(layer) for layer in targets]:
        raise InputError(f"Cannot merge the adapters of {type(model).__name__}: its layers differ from a new "
                         "model's of the same config.")
    for source, target in zip(sources, targets):
        store = {}
        source.save_own_variables(store)
        target.load_own_variables(store)
    return copy


class LoraMixin:
    """`enable_lora`, `save_lora_weights` and `load_lora_weights` of the ALBERT models (on the encoder: the
    model itself, or a task model's `encoder`)."""

    def enable_lora(self, rank, target_names=None, lora_alpha=None):
        """Keras' LoRA of rank `rank` on the encoder's `Dense` layers named in `target_names` (default the query
        and value projections; any of `albert_tf.models.lora.TARGET_NAMES`), the rest of the encoder frozen and
        a task model's head trainable. The outputs do not change until the adapters are trained."""
        enable_lora(getattr(self, "encoder", self), rank, target_names, lora_alpha)

    def save_lora_weights(self, filepath):
        """Writes the trainable weights (adapters, their layers' biases, a task head) to `filepath`
        (`*.lora.h5`)."""
        save_lora_weights(self, filepath)

    def load_lora_weights(self, filepath):
        """Reads a `save_lora_weights` file into this model (LoRA enabled with the same rank first)."""
        load_lora_weights(self, filepath)
