"""Converts any checkpoint source to a Keras weights file or a TF1 checkpoint with the original names.

Output directory layout (both formats): `albert_config.json`, the weights, and `30k-clean.model` (plus
`30k-clean.vocab` / a WordPiece vocab) when the source has them. Weights: `model.weights.h5` for `keras`
(load with `model.load_weights(...)` into the class logged by the conversion), `model.ckpt-best.index` /
`model.ckpt-best.data-00000-of-00001` for `tf1` (so the output directory is itself a release directory).
"""

import importlib
import os
import shutil
import time

from absl import logging

from albert_tf.checkpoints import reader as reader_lib
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.checkpoints.sources import CONFIG_NAME, RELEASE_CHECKPOINT, resolve_source
from albert_tf.checkpoints.writer import save_tf1_checkpoint

FORMATS = ("keras", "tf1")
KERAS_WEIGHTS_NAME = "model.weights.h5"
MODEL_CLASSES = {
    "encoder": ("albert_tf.models.albert_model", "AlbertModel"),
    "pretrainer": ("albert_tf.models.pretrainer", "AlbertPretrainer"),
    "classifier": ("albert_tf.models.classifier", "AlbertClassifier"),
    "squad_v1": ("albert_tf.models.squad", "AlbertSquadV1"),
    "squad_v2": ("albert_tf.models.squad", "AlbertSquadV2"),
    "race": ("albert_tf.models.race", "AlbertRace"),
}
MODELS = ("auto",) + tuple(MODEL_CLASSES)


def model_class(kind):
    """The class for a `--model` value (`encoder`, `pretrainer`, `classifier`, `squad_v1`, `squad_v2`, `race`)."""
    if kind not in MODEL_CLASSES:
        raise ValueError(f"`model` must be one of {', '.join(MODELS)}. Received: `model={kind!r}`.")
    module, name = MODEL_CLASSES[kind]
    return getattr(importlib.import_module(module), name)


def detect_model(reader):
    """Picks the model kind whose heads the checkpoint holds (bare `output_weights` reads as `classifier`).

    Returns:
        `(kind, constructor kwargs)`.
    """
    if reader.is_tf2:
        children = reader.tf2_children()
        if "mlm_head" in children and "sop_head" in children:
            return "pretrainer", {}
        if "classifier_head" in children:
            return "classifier", {"num_labels": reader.tf2_shape("model/classifier_head/output_weights")[0]}
        if "squad_head" in children:
            return "squad_v1", {}
        if "start_dense" in children:
            return "squad_v2", {}
        if "race_head" in children:
            return "race", {}
        return "encoder", {}
    names = reader.shapes
    if "cls/predictions/output_bias" in names and "cls/seq_relationship/output_weights" in names:
        return "pretrainer", {}
    if "cls/squad/output_weights" in names:
        return "squad_v1", {}
    if "start_logits/dense/kernel" in names:
        return "squad_v2", {}
    if "output_weights" in names:
        return "classifier", {"num_labels": names["output_weights"][0]}
    return "encoder", {}


def _copy_atomic(src, dst):
    tmp = dst + ".tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def convert(input_path, output_dir, output_format="keras", model="auto", config_file=None, **model_kwargs):
    """Reads `input_path` (any source form) and writes config, weights and SentencePiece model to `output_dir`.

    Args:
        input_path: str, checkpoint prefix, release dir, `.tar.gz`, TF-Hub TF1 module dir, or our TF2 checkpoint.
        output_dir: str, created if needed.
        output_format: `keras` (a `.weights.h5`) or `tf1` (a checkpoint with the original names).
        model: `auto` (from the heads in the checkpoint) or one of `MODEL_CLASSES`; every variable the chosen
            model has must be in the source.
        config_file: str or None, `albert_config.json` to use when the source has none.
        **model_kwargs: constructor arguments of the model (e.g. `num_labels`); `auto` infers `num_labels`.

    Returns:
        dict with `model` (the class name), `weights` (path written), `config_file`, `spm_model_file` (or None).
    """
    from albert_tf.models.albert_model import as_config  # Local import: models import this package.

    if output_format not in FORMATS:
        raise ValueError(f"`output_format` must be one of {', '.join(FORMATS)}. Received: `{output_format!r}`.")
    if model not in MODELS:
        raise ValueError(f"`model` must be one of {', '.join(MODELS)}. Received: `model={model!r}`.")
    start = time.time()
    with resolve_source(input_path) as source:
        config_path = config_file or source.config_file
        if config_path is None:
            raise ValueError(f"No `{CONFIG_NAME}` found with `{input_path}`; pass `config_file` "
                             "(`--albert_config_file`).")
        config = as_config(config_path)
        reader = reader_lib.CheckpointReader(source.checkpoint_prefix)
        kind, detected_kwargs = detect_model(reader) if model == "auto" else (model, {})
        cls = model_class(kind)
        built = cls(config, **dict(detected_kwargs, **model_kwargs))
        logging.info("Converting `%s` (%s) as %s.", input_path, source.kind, cls.__name__)
        result = restore_checkpoint(built, source.checkpoint_prefix, allow_missing_heads=False)
        if result.ignored:
            logging.warning("Not converted (no place in %s): %s", cls.__name__, ", ".join(result.ignored))

        os.makedirs(output_dir, exist_ok=True)
        config.to_json_file(os.path.join(output_dir, CONFIG_NAME))
        if output_format == "keras":
            weights = os.path.join(output_dir, KERAS_WEIGHTS_NAME)
            tmp = os.path.join(output_dir, ".tmp-" + KERAS_WEIGHTS_NAME)
            built.save_weights(tmp)
            os.replace(tmp, weights)
        else:
            weights = save_tf1_checkpoint(built, os.path.join(output_dir, RELEASE_CHECKPOINT))
        spm_out = None
        for path in (source.spm_model_file, source.vocab_file):
            if path is not None:
                out = os.path.join(output_dir, os.path.basename(path))
                _copy_atomic(path, out)
                spm_out = out if path == source.spm_model_file else spm_out
    logging.info("Wrote %s weights of %s (%d parameters) to `%s` in %.1f s.", output_format, cls.__name__,
                 built.count_params(), output_dir, time.time() - start)
    return {"model": cls.__name__, "weights": weights, "config_file": os.path.join(output_dir, CONFIG_NAME),
            "spm_model_file": spm_out}
