"""Converts any checkpoint source to Keras weights, a TF1 checkpoint, a Hugging Face or a keras-hub directory.

Output directory layout:
* `keras`: `albert_config.json`, `model.weights.h5` (load with `model.load_weights(...)` into the class logged by
  the conversion), `30k-clean.model`;
* `tf1`: `albert_config.json`, `model.ckpt-best.index` / `.data-00000-of-00001` with the original names,
  `30k-clean.model` (the output directory is itself a release directory);
* `hf`: `config.json`, `model.safetensors` (transformers' names for the model's class: `AlbertModel`,
  `AlbertForPreTraining`, `AlbertForSequenceClassification`, `AlbertForQuestionAnswering`,
  `AlbertForMultipleChoice`), `spiece.model`;
* `hf_tf`: the same with transformers 4.x's TensorFlow `tf_model.h5` instead of `model.safetensors`, for the
  `TFAlbert*` classes of transformers before v5;
* `keras_hub`: a keras-hub `AlbertBackbone` preset (`config.json`, `model.weights.h5`, `metadata.json`,
  `tokenizer.json`, `assets/tokenizer/vocabulary.spm`); a sequence classifier's head is written with it as
  keras-hub's `AlbertTextClassifier` task (`task.json`, `task.weights.h5`, `preprocessor.json`).

Everything is written into a temporary directory beside `output_dir` and moved into place at the end, so an
error leaves no half-written output.
"""

import collections
import os
import shutil
import time
import uuid

import numpy as np
from absl import logging

from albert_tf import fileio, registry
from albert_tf.checkpoints import hf, hf_tf, keras_hub, table
from albert_tf.checkpoints import reader as reader_lib
from albert_tf.checkpoints.restore import restore_source
from albert_tf.checkpoints.sources import CONFIG_NAME, RELEASE_CHECKPOINT, SPM_MODEL_NAME, resolve_source
from albert_tf.checkpoints.writer import save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError

FORMATS = ("keras", "tf1", "hf", "hf_tf", "keras_hub")
KERAS_WEIGHTS_NAME = "model.weights.h5"


def models():
    """The `--model` values: `auto` (detected from the checkpoint) and every registered model kind."""
    return ("auto",) + registry.names()


def model_class(kind):
    """The class for a `--model` value (a registered model kind: `encoder`, `pretrainer`, `classifier`, ...)."""
    return registry.get(kind).model_class


def _shape_getter(reader):
    """`shape(tf1_name)` of a head variable in `reader`, or None: TF1 names directly, or in one of our TF2
    checkpoints at the object path of the row's attribute path (`model/classifier_head/output_weights`)."""
    if not reader.is_tf2:
        return reader.shapes.get
    paths = {row.name: "model/" + row.path.replace(".", "/") for head in registry.heads() for row in head.rows}
    return lambda name: reader.tf2_shape(paths[name]) if name in paths else None


def _kind_shape(reader, kind, name):
    """Shape of `kind`'s head variable `name` in `reader`, or None (TF2: at the object path of `kind`'s own row:
    heads of several kinds share a TF1 name such as `output_weights`)."""
    if not reader.is_tf2:
        return reader.shapes.get(name)
    for head in kind.heads:
        for row in head.rows:
            if row.name == name:
                return reader.tf2_shape("model/" + row.path.replace(".", "/"))
    return None


def _holds(reader, kind, shape):
    """Whether `reader` holds every head variable of `kind` (TF2: every head attribute with variables)."""
    if reader.is_tf2:
        children = reader.tf2_children()
        return all(children.get(root) for head in kind.heads for root in head.roots)
    return all(shape(name) is not None for name in kind.tf1_names)


def detect_model(reader, architecture=None):
    """Picks the model kind whose heads the checkpoint holds (see `albert_tf.registry`: a fine-tuned head before
    the pretraining heads, then most head variables, then the lower `order`; the root-scope `output_weights` reads as `classifier`). A Hugging Face directory's
    transformers class (`architecture`, from `config.json`) names its kind when the heads are there: the
    classifier and multiple choice heads share their names (`classifier.weight`).

    Returns:
        `(kind, constructor kwargs)`: `num_labels` from the first dimension of the kind's `labels_variable`.
    """
    shape = _shape_getter(reader)
    held = [kind for kind in registry.kinds() if _holds(reader, kind, shape)]
    named = [kind for kind in held if architecture and kind.hf_architecture == architecture]
    if named:
        held = named
    # A fine-tuned head wins over the pretraining heads a fine-tuned checkpoint also holds (the original's MNLI
    # `model.ckpt-best` keeps `cls/predictions` and `cls/seq_relationship` from its initial checkpoint).
    fine_tuned = [kind for kind in held if kind.heads and not kind.inherited_heads]
    if fine_tuned:
        held = fine_tuned
    if not held:
        return "encoder", {}
    best = max(held, key=lambda kind: (len(kind.tf1_names), -kind.order))
    return best.name, kind_kwargs(reader, best.name)


def kind_kwargs(reader, name):
    """The constructor arguments of the model kind `name` that `reader`'s head decides: `num_labels` from the
    first dimension of the kind's `labels_variable`, when the checkpoint holds it."""
    kind = registry.get(name)
    labels_shape = _kind_shape(reader, kind, kind.labels_variable) if kind.labels_variable else None
    return kind.model_kwargs(labels_shape[0] if labels_shape else None)


def describe_heads(source):
    """What the heads of the resolved checkpoint `source` read as, for a message that refuses it: `a classifier
    head (output_weights [3, 768])`, `a pretrainer head (cls/predictions/output_bias [30000])`, `no head (an
    encoder)`. A Hugging Face directory's `config.json` class picks between heads that share their names."""
    reader = reader_lib.open_reader(source)
    architecture = hf.architecture_of(source.directory) if source.layout == "hf_model" else None
    name, _ = detect_model(reader, architecture)
    if name == "encoder":
        return "no head (an encoder)"
    kind = registry.get(name)
    variable = kind.labels_variable or kind.tf1_names[0]
    dims = _kind_shape(reader, kind, variable)
    return f"a {name} head ({variable} {list(dims)})" if dims is not None else f"a {name} head"


def tf1_values(model, components=None):
    """`OrderedDict` TF1 name -> `(shape, producer)` of `model`'s variables (of `components` only, if given);
    `producer()` returns the float32 value in the original layout."""
    values = collections.OrderedDict()
    for name, target in table.model_targets(model).items():
        if components is not None and target.component not in components:
            continue
        values[name] = (target.tf1_shape(), _value_of(target))
    return values


def _value_of(target):
    return lambda: np.asarray(target.transform.to_tf1(target.variable.numpy()), np.float32)


def _publish(tmp, output_dir):
    """Moves the finished files of `tmp` to `output_dir` (a rename when `output_dir` does not exist yet)."""
    if not os.path.exists(output_dir):
        os.replace(tmp, output_dir)
        return
    for root, _, files in os.walk(tmp):
        target_root = os.path.join(output_dir, os.path.relpath(root, tmp))
        os.makedirs(target_root, exist_ok=True)
        for name in files:
            os.replace(os.path.join(root, name), os.path.join(target_root, name))
    shutil.rmtree(tmp, ignore_errors=True)


def _label_names(built, source, num_labels):
    """The names of `built`'s outputs for `config.json`: the model's own (`labels`, when not the defaults), else
    those of a Hugging Face source directory; None for transformers' defaults."""
    if num_labels is None:
        return None
    labels = list(getattr(built, "labels", None) or [])
    if len(labels) == num_labels and labels != [f"LABEL_{i}" for i in range(num_labels)]:
        return labels
    if source.layout == "hf_model":
        return hf.labels_of(source.directory, num_labels)
    return None


def _write(built, config, output_format, out, source):
    """Writes `built` in `output_format` into the directory `out`; returns the weights path."""
    components = table.model_components(built)
    spm = source.spm_model_file
    if output_format in ("hf", "hf_tf"):
        kind = registry.kind_of(built)
        num_labels = getattr(built, "num_labels", None) if kind is not None and kind.labels_variable else None
        arch = hf.write(tf1_values(built), config, components, out, num_labels=num_labels,
                        labels=_label_names(built, source, num_labels), tensorflow=output_format == "hf_tf")
        logging.info("Hugging Face class: %s%s", "TF" if output_format == "hf_tf" else "", arch)
        if spm:
            fileio.copy_atomic(spm, os.path.join(out, hf.SPM))
        return os.path.join(out, hf_tf.WEIGHTS if output_format == "hf_tf" else hf.WEIGHTS)
    if output_format == "keras_hub":
        kind = registry.kind_of(built)
        # keras-hub's task class with the same head (`AlbertTextClassifier`), where the kind has one.
        task_head = kind.heads[0].name if kind is not None and kind.keras_hub_task else None
        dropped = [c for c in components if c not in (table.ENCODER, task_head)]
        if dropped:
            logging.warning("A keras-hub preset holds the encoder and a sequence classifier's head; not written: "
                            "%s heads.", ", ".join(dropped))
        keras_hub.write(tf1_values(built, {table.ENCODER}), config, out, spm_model_file=spm)
        if task_head in components:
            head = tf1_values(built, {task_head})
            keras_hub.write_classifier_task(out, config, head["output_weights"][1](), head["output_bias"][1](),
                                            spm_written=bool(spm))
        return os.path.join(out, keras_hub.WEIGHTS)
    config.to_json_file(os.path.join(out, CONFIG_NAME))
    if output_format == "keras":
        weights = os.path.join(out, KERAS_WEIGHTS_NAME)   # `out` is the temporary directory: no partial file.
        built.save_weights(weights)
    else:
        weights = save_tf1_checkpoint(built, os.path.join(out, RELEASE_CHECKPOINT))
    if spm:
        fileio.copy_atomic(spm, os.path.join(out, SPM_MODEL_NAME))
    if source.vocab_file:
        fileio.copy_atomic(source.vocab_file, os.path.join(out, os.path.basename(source.vocab_file)))
    return weights


def convert(input_path, output_dir, output_format="keras", model="auto", config_file=None, **model_kwargs):
    """Reads `input_path` (any source form) and writes config, weights and SentencePiece model to `output_dir`.

    Args:
        input_path: str, checkpoint prefix, release dir, `.tar.gz`, TF-Hub TF1 module dir, our TF2 checkpoint,
            a TF2 SavedModel of tf-models' AlbertEncoder, a keras-hub preset or a Hugging Face directory.
        output_dir: str, created if needed; files already there with other names are kept.
        output_format: `keras`, `tf1`, `hf`, `hf_tf` or `keras_hub` (see the module docstring).
        model: `auto` (from the heads in the checkpoint) or a registered model kind; every variable the chosen
            model has must be in the source.
        config_file: str or None, `albert_config.json` to use instead of the source's.
        **model_kwargs: constructor arguments of the model (e.g. `num_labels`); `auto` infers `num_labels`.

    Returns:
        dict with `model` (the class name), `weights` (path written), `config_file` (None for `hf` and
        `keras_hub`, whose configs are `config.json`), `spm_model_file` (or None).
    """
    if output_format not in FORMATS:
        raise InputError(f"`output_format` must be one of {', '.join(FORMATS)}. Received: `{output_format!r}`.")
    if model not in models():
        raise InputError(f"`model` must be one of {', '.join(models())}. Received: `model={model!r}`.")
    start = time.time()
    output_dir = os.path.abspath(os.fspath(output_dir))
    with resolve_source(input_path) as source:
        config_path = config_file or source.config_file
        if config_path is None:
            reason = source.config_note or f"no `{CONFIG_NAME}` found with `{input_path}`."
            raise InputError(f"No config for `{input_path}`: {reason} Pass `config_file` (`--albert_config_file`).")
        config = AlbertConfig.from_json_file(config_path)
        reader = reader_lib.open_reader(source)
        architecture = hf.architecture_of(source.directory) if source.layout == "hf_model" else None
        # A named kind takes its label count from the checkpoint's head too (`model_kwargs` still wins).
        kind, detected_kwargs = (detect_model(reader, architecture) if model == "auto"
                                 else (model, kind_kwargs(reader, model)))
        cls = model_class(kind)
        built = cls(config, **dict(detected_kwargs, **model_kwargs))
        logging.info("Converting `%s` (%s) as %s.", input_path, source.kind, cls.__name__)
        result = restore_source(built, source, allow_missing_heads=False)
        if result.ignored:
            logging.warning("Not converted (no place in %s): %s", cls.__name__, ", ".join(result.ignored))
        os.makedirs(os.path.dirname(output_dir), exist_ok=True)
        tmp = f"{output_dir}.tmp-{uuid.uuid4().hex[:8]}"
        os.makedirs(tmp)
        try:
            weights = _write(built, config, output_format, tmp, source)
            _publish(tmp, output_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    weights = os.path.join(output_dir, os.path.relpath(weights, tmp))
    spm_name = {"hf": hf.SPM, "hf_tf": hf.SPM, "keras_hub": keras_hub.SPM}.get(output_format, SPM_MODEL_NAME)
    spm_out = os.path.join(output_dir, spm_name) if source.spm_model_file else None
    logging.info("Wrote %s weights of %s (%d parameters) to `%s` in %.1f s.", output_format, cls.__name__,
                 built.count_params(), output_dir, time.time() - start)
    config_out = None if output_format in ("hf", "hf_tf", "keras_hub") else os.path.join(output_dir, CONFIG_NAME)
    return {"model": cls.__name__, "weights": weights, "config_file": config_out, "spm_model_file": spm_out}
