"""LiteRT (TFLite) export: every model of the package as a `.tflite` file with resizable or fixed inputs, in
float32, float16, dynamic-range int8 or integer int8, with its tokenizer, config and a metadata file beside it.

`export_tflite(model, output_dir, ...)` writes into `output_dir`:

* `model.tflite`: one `serving_default` signature with the SavedModel's input and output names
  (`export.serving_spec`) and int32 inputs. By default (`dynamic_shapes=True`) their batch and sequence
  dimensions are resizable (`dynamic_input_shapes`: `[None, None]`, `[None, 4, None]` for RACE, the pretrainer's
  `mlm_positions [None, None]`), so that each batch runs at its own size and length (`Interpreter.
  resize_tensor_input`, which `LiteModel` does per call; no recompilation: real text runs at its own length);
  with `dynamic_shapes=False` (MediaPipe's export) they are fixed, `[batch_size, max_seq_length]`
  (`ServingSpec.fixed_input_shapes`). ALBERT's shared
  block is one set of variables applied `num_hidden_layers` times, so its weights appear once in the file,
  whatever the number of layers.
* `albert_lite.json` (`METADATA_FILE`): the model kind (its `albert_tf.registry` name), the signature's inputs and
  outputs with their shapes, `max_seq_length`, `batch_size`, `do_lower_case`, the labels, the quantization, the
  other files' names and the facts the kind's serving spec adds (`ServingSpec.export_facts`: the pretrainer's
  `max_predictions_per_seq`, SQuAD 2.0's beam sizes, ...).
* `albert_config.json` and the SentencePiece model, so that `albert_tf.pipeline(task, "<dir>/model.tflite")`
  (or the directory) runs the export on LiteRT with the runners' own preprocessing and decoding.

Quantizations (`QUANTIZATIONS`):

* `none`: float32 weights and activations.
* `float16`: float16 weights, computed in float32 (half the file).
* `dynamic`: int8 weights of the matrix multiplications, activations quantized on the fly (a quarter of
  the file; the fastest on CPUs).
* `int8`: weights and activations int8 with ranges calibrated on `calibration_file` (raw text, one example
  per line, or the task's TFRecords); `TFLITE_BUILTINS` stays allowed, so an op without an int8 kernel keeps
  its float kernel. Measured on the quickstart's trained model (README, "Deploying small"), integer
  activations keep the masked-LM accuracy within 0.004 but move a sentence-order classifier's probabilities by
  up to 0.36 (agreement with float 78.5%; dynamic: 99.9%); on an earlier quickstart model they cost 0.025
  masked-LM accuracy, and keeping the LayerNorm, softmax and GELU ops float through the converter's selective
  quantization (`QuantizationDebugOptions(denylisted_ops=...)`) did not change that. `dynamic` is the int8
  export that keeps the accuracy.

`LiteModel(path)` runs an export on `ai_edge_litert.interpreter.Interpreter` (the `[lite]` extra; TensorFlow's
own `tf.lite.Interpreter` when it is not installed) on NumPy batches of any size: at their own shape on a
resizable export, padded to the fixed batch on a fixed one; on every core of the process by default
(`num_threads`).
"""

import inspect
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.models.lora import merged_copy
from albert_tf.export import saved_model as export_lib
from albert_tf.text import modes as text_modes
from albert_tf.text import tokenization
from albert_tf.config import AlbertConfig, check_max_seq_length
from albert_tf.errors import InputError, check_export_backend
from albert_tf.fileio import check_directory, copy_atomic, write_bytes_atomic, write_text_atomic
from albert_tf.models.albert_model import as_config

QUANTIZATIONS = ("none", "float16", "dynamic", "int8")
MODEL_FILE = "model.tflite"
METADATA_FILE = "albert_lite.json"
CONFIG_FILE = "albert_config.json"
# The packed tokenizer a `--format=mediapipe` export writes beside its model (`albert_tf.export.mediapipe`).
MEDIAPIPE_SPM_FILE = "mediapipe_spm.model"
SIGNATURE = export_lib.SERVING_DEFAULT
METADATA_FORMAT = "albert_tf.lite/1"
DEFAULT_CALIBRATION_STEPS = 100


# --- Conversion --------------------------------------------------------------------------------------------


def input_shapes(model, batch_size, max_seq_length, **lengths):
    """`{name: shape}` of the fixed-shape `serving_default` inputs of `model`'s LiteRT export (its serving
    spec's `fixed_input_shapes`; `lengths`: the text modes' lengths, e.g. the pretrainer's mask slots
    `max_predictions_per_seq`, defaults for those not given)."""
    lengths = text_modes.resolve_lengths(lengths, max_seq_length, shrink=False)
    return export_lib.serving_spec(model).fixed_input_shapes(batch_size, max_seq_length, lengths)


def dynamic_input_shapes(model, shapes):
    """`shapes` (`input_shapes`) with the batch dimension and every dimension the serving spec leaves unknown
    None (the token inputs' lengths, the pretrainer's `mlm_positions` width): the signature of an export whose
    batches run at their own size and length (`Interpreter.resize_tensor_input`)."""
    token_specs = export_lib.serving_spec(model).token_specs()
    dynamic = {}
    for name, shape in shapes.items():
        spec = token_specs.get(name)
        inner = shape[1:] if spec is None else [None if dim is None else size
                                                for dim, size in zip(spec.shape.as_list()[1:], shape[1:])]
        dynamic[name] = [None] + list(inner)
    return dynamic


def _serving_function(model, shapes, threshold, outputs=None):
    """A `tf.function` with keyword inputs `shapes` (int32) returning the model's named serving outputs (those
    named in `outputs`, when given)."""
    spec = export_lib.serving_spec(model)
    names = list(shapes)

    def serve(*args):
        features = dict(zip(names, args))
        served = spec.outputs(model(spec.model_inputs(features), training=False), threshold)
        if outputs is None:
            return served
        unknown = sorted(set(outputs) - set(served))
        if unknown:
            raise InputError(f"`outputs`: the {spec.kind} model has no output {unknown}; it has {sorted(served)}.")
        return {name: served[name] for name in outputs}

    serve.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    serve.__name__ = "serve"
    return tf.function(serve, input_signature=[tf.TensorSpec(shapes[n], tf.int32, name=n) for n in names])


def _check_quantize(quantize, calibration):
    if quantize not in QUANTIZATIONS:
        raise InputError(f"`quantize` must be one of {', '.join(QUANTIZATIONS)}. Received: `quantize={quantize!r}`.")
    if quantize == "int8" and calibration is None:
        raise InputError("`quantize='int8'` calibrates the activation ranges: pass `calibration_file` (raw text, "
                         "one example per line, or the task's TFRecords) or calibration features.")
    if quantize != "int8" and calibration is not None:
        raise InputError(f"Calibration data applies to `quantize='int8'` only. Received `quantize={quantize!r}`.")


def convert(model, max_seq_length, batch_size=1, quantize="none", calibration=None, threshold=None, outputs=None,
            dynamic_shapes=False, **lengths):
    """The LiteRT flatbuffer (bytes) of `model` with one `serving_default` signature: fixed-shape, or with
    `dynamic_shapes` a batch dimension and token lengths of any size (`dynamic_input_shapes`).

    Args:
        model: a built model of the package (`AlbertModel`, `AlbertPretrainer`, `AlbertClassifier`,
            `AlbertSquadV1`, `AlbertSquadV2`, `AlbertRace`).
        max_seq_length: int, the fixed sequence length.
        batch_size: int, the fixed batch size.
        quantize: one of `QUANTIZATIONS`.
        calibration: for `int8`: a list of feature dicts (`{input name: int array of the input's shape without
            the batch dimension}`), e.g. from `calibration_features`.
        threshold: optional float, the classifier's constant `threshold` output.
        outputs: optional names of the serving outputs to keep (default: all of the kind's).
        dynamic_shapes: bool, whether the batch size and the sequence length are resizable at run time
            (`LiteModel` runs each batch at its own shape); `batch_size` and `max_seq_length` then shape the
            calibration batches only.
        **lengths: the text modes' lengths that shape inputs (`max_predictions_per_seq`: the pretrainer's
            `mlm_positions` width).
    """
    _check_quantize(quantize, calibration)
    for name, value in (("max_seq_length", max_seq_length), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"`{name}` must be a positive int. Received: `{name}={value!r}`.")
    check_max_seq_length(max_seq_length, model.config.max_position_embeddings)
    shapes = input_shapes(model, int(batch_size), int(max_seq_length), **lengths)
    serve = _serving_function(model, dynamic_input_shapes(model, shapes) if dynamic_shapes else shapes, threshold,
                              outputs)
    serve.get_concrete_function()  # Builds an unbuilt model, so that its variables exist below.
    module = tf.Module()
    # The backing tf.Variables: a SavedModel that tracks only the Keras 3 wrappers converts without weights.
    module.model_variables = export_lib.backing_variables(model)
    module.serve = serve
    staging = tempfile.mkdtemp(prefix="albert_lite_")
    try:
        tf.saved_model.save(module, staging, signatures={SIGNATURE: serve})
        converter = tf.lite.TFLiteConverter.from_saved_model(staging, signature_keys=[SIGNATURE])
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantize == "int8":
            return _convert_int8(converter, calibration, shapes)
        return converter.convert()
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _representative_dataset(calibration, shapes):
    batch = next(iter(shapes.values()))[0]

    def generate():
        for start in range(0, len(calibration) - batch + 1, batch):
            rows = calibration[start:start + batch]
            yield {name: np.asarray([row[name] for row in rows], np.int32).reshape(shape)
                   for name, shape in shapes.items()}

    return generate


def _convert_int8(converter, calibration, shapes):
    """Integer quantization: int8 weights and activations, ranges from `calibration`; ops without an int8
    kernel keep their float kernel (`TFLITE_BUILTINS`)."""
    batch = next(iter(shapes.values()))[0]
    if len(calibration) < batch:
        raise InputError(f"Calibration needs at least `batch_size={batch}` examples. Received: {len(calibration)}.")
    converter.representative_dataset = _representative_dataset(calibration, shapes)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS]
    return converter.convert()


# --- Calibration data --------------------------------------------------------------------------------------


def _is_tfrecord(path):
    try:
        for _ in tf.data.TFRecordDataset(path).take(1):
            pass
        return True
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
        return False


def _tfrecord_features(path, spec, shapes, lengths, limit):
    """The `serve_examples` features of the first `limit` records of `path`, as the serving spec reads them."""
    seq = shapes["input_ids"][-1]
    example_spec = spec.example_spec(seq, lengths)
    rows = []
    try:
        for record in tf.data.TFRecordDataset(path).take(limit):
            features, _ = spec.example_features(tf.io.parse_example(record[None], example_spec), seq)
            rows.append({name: features[name][0].numpy().astype(np.int32).reshape(shape[1:])
                         for name, shape in shapes.items()})
    except tf.errors.InvalidArgumentError as e:
        raise InputError(f"`{path}`: the records do not hold the {spec.kind} features of length {seq} "
                         f"({', '.join(example_spec)}): {str(e).splitlines()[0]}") from e
    return rows


def _text_features(path, spec, shapes, tokenizer, do_lower_case, limit):
    """One example per line, split at tabs and packed by the serving spec (`ServingSpec.calibration_rows`:
    `text_a[<TAB>text_b]`; SQuAD `question<TAB>context`; RACE `article<TAB>question<TAB>option 1<TAB>...`)."""
    rows = []
    with tf.io.gfile.GFile(path, "r") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    for number, line in enumerate(lines[:limit], start=1):
        rows.extend(spec.calibration_rows(line.split("\t"), path, number, tokenizer, do_lower_case, shapes))
    if not rows:
        raise InputError(f"`{path}` holds no calibration example.")
    return rows


def calibration_features(path, model, max_seq_length, spm_model_file=None, do_lower_case=True, batch_size=1,
                         limit=DEFAULT_CALIBRATION_STEPS, **lengths):
    """Up to `limit` feature dicts for `convert(..., calibration=...)` from `path`: the task's TFRecords (the
    `serve_examples` features), or raw text packed as the task's runner packs it (needs `spm_model_file`);
    `lengths` as `convert`'s."""
    if not tf.io.gfile.exists(path):
        raise InputError(f"`calibration_file` not found: `{path}`.")
    spec = export_lib.serving_spec(model)
    lengths = text_modes.resolve_lengths(lengths, max_seq_length, shrink=False)
    shapes = input_shapes(model, batch_size, max_seq_length, **lengths)
    if _is_tfrecord(path):
        return _tfrecord_features(path, spec, shapes, lengths, limit)
    if spm_model_file is None:
        raise InputError(f"`calibration_file={path}` is text: pass `spm_model_file` to tokenize it.")
    tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model_file, do_lower_case=do_lower_case)
    return _text_features(path, spec, shapes, tokenizer, do_lower_case, limit)


# --- The export directory ----------------------------------------------------------------------------------


def check_labels(labels):
    """`labels` as strings; `InputError` for a name given twice (a label file maps each name to one output)."""
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputError(f"`labels` names {', '.join(repr(label) for label in twice)} more than once; each output "
                         f"needs its own name. Received: {','.join(labels)}.")
    return labels


def check_output_dir(output_dir, overwrite=False, file_name=MODEL_FILE, name="output_dir"):
    """Raises `InputError` when `output_dir` (the argument `name`) is a file, or already holds a LiteRT export
    (`file_name` or the metadata file) and `overwrite` is False: an export never replaces another silently."""
    check_directory(output_dir, name)
    existing = [f for f in (file_name, METADATA_FILE) if tf.io.gfile.exists(os.path.join(output_dir, f))]
    if existing and not overwrite:
        raise InputError(f"`{output_dir}` already holds a LiteRT export (`{existing[0]}`): pass another `{name}`, "
                         "or --overwrite (`overwrite=True`) to replace it.")


def _labels(model, labels):
    num_labels = getattr(model, "num_labels", None)
    if labels is not None:
        labels = check_labels(labels)
        if num_labels is None or len(labels) != num_labels:
            raise InputError(f"`labels` has {len(labels)} names; the model ({type(model).__name__}) has "
                             f"{num_labels} outputs.")
    return num_labels, labels


def export_tflite(model, output_dir, spm_model_file=None, do_lower_case=True, max_seq_length=128, batch_size=1,
                  quantize="none", calibration_file=None, calibration=None, config=None, threshold=None,
                  labels=None, file_name=MODEL_FILE, outputs=None, package=None, extra_files=None, dynamic_shapes=True,
                  overwrite=False,
                  **lengths):
    """Writes `<output_dir>/<file_name>` (LiteRT), `albert_lite.json`, `albert_config.json` and the SentencePiece
    model (see the module docstring); returns the `.tflite` path.

    `calibration_file` (raw text or TFRecords, for `quantize="int8"`) is read with `calibration_features`; or
    pass `calibration`, a list of feature dicts. `labels` names the classifier's outputs in the metadata.
    `lengths` are the text modes' lengths (`convert`); those of the model's kind are recorded in the metadata.
    `outputs` keeps only the named serving outputs (`convert`); `dynamic_shapes` (default) makes the batch size
    and the token lengths resizable, so that each batch runs at its own size and length up to `max_seq_length`
    (`batch_size` is then `albert_tf.pipeline`'s default batch for the export); `package` (bytes -> bytes) rewrites the flatbuffer
    before it is written and `extra_files` (`{name: bytes}`) are written beside it (the MediaPipe export's
    metadata and tokenizer, `albert_tf.export.mediapipe`). An `output_dir` that already holds a LiteRT export is
    refused unless `overwrite` (`check_output_dir`).
    """
    check_export_backend("tflite")
    check_output_dir(output_dir, overwrite, file_name)
    model = merged_copy(model)   # LoRA adapters merged into the kernels (`albert_tf.models.lora`)
    spec = export_lib.serving_spec(model)
    kind = spec.kind
    num_labels, labels = _labels(model, labels)
    config = as_config(config) if config is not None else model.config
    proto = None
    if spm_model_file is not None:
        if not tf.io.gfile.exists(spm_model_file):
            raise InputError(f"`spm_model_file` not found: `{spm_model_file}`.")
        with tf.io.gfile.GFile(spm_model_file, "rb") as f:
            proto = f.read()
        tokenization.check_spm_vocab_size(proto, model.config.vocab_size, spm_model_file, "the model's config")
    if calibration_file is not None:
        if calibration is not None:
            raise InputError("Pass `calibration_file` or `calibration`, not both.")
        if quantize != "int8":
            raise InputError(f"`calibration_file` applies to `quantize='int8'` only. Received `quantize={quantize!r}`.")
        calibration = calibration_features(calibration_file, model, max_seq_length, spm_model_file, do_lower_case,
                                           batch_size, **lengths)
    flatbuffer = convert(model, max_seq_length, batch_size, quantize, calibration, threshold, outputs,
                         dynamic_shapes=dynamic_shapes, **lengths)
    lite = LiteModel(flatbuffer)
    metadata = {
        "format": METADATA_FORMAT, "model_kind": kind, "model_file": file_name, "signature": SIGNATURE,
        "inputs": {name: list(spec.shape) for name, spec in lite.input_specs.items()},
        "outputs": {name: list(spec.shape) for name, spec in lite.output_specs.items()},
        "batch_size": int(batch_size), "max_seq_length": int(max_seq_length),
        "dynamic_shapes": bool(lite.dynamic_shapes),
        "num_labels": num_labels, "labels": labels, "do_lower_case": bool(do_lower_case), "quantization": quantize,
        "config_file": CONFIG_FILE, "spm_model_file": os.path.basename(spm_model_file) if proto else None,
    }
    # The kind's own facts: its text mode's lengths (the pretrainer's `max_predictions_per_seq`, ...) and what
    # its serving spec adds (SQuAD 2.0's beam sizes, ...).
    metadata.update(export_lib.kind_lengths(spec, text_modes.resolve_lengths(lengths, max_seq_length, shrink=False)))
    metadata.update(spec.export_facts(model))
    tf.io.gfile.makedirs(output_dir)
    if proto is not None:
        copy_atomic(spm_model_file, os.path.join(output_dir, metadata["spm_model_file"]))
    write_text_atomic(os.path.join(output_dir, CONFIG_FILE), config.to_json_string())
    for name, data in (extra_files or {}).items():
        write_bytes_atomic(os.path.join(output_dir, name), data)
    path = os.path.join(output_dir, file_name)
    write_bytes_atomic(path, package(flatbuffer) if package is not None else flatbuffer)
    # The metadata last: a directory with it is complete.
    write_text_atomic(os.path.join(output_dir, METADATA_FILE), json.dumps(metadata, indent=2, sort_keys=True))
    logging.info("Wrote %s (%s, %s, %d bytes).", path, kind, quantize, len(flatbuffer))
    return path


def export_tflite_from_checkpoint(input_path, output_dir, model="encoder", num_labels=2, albert_config_file=None,
                                  spm_model_file=None, **export_kwargs):
    """Loads a model from any checkpoint source (as `export.export_from_checkpoint`) and writes its LiteRT export
    (the library side of `albert-export --format=tflite`); returns the `.tflite` path.

    `export_kwargs` are `export_tflite` arguments (`max_seq_length`, `batch_size`, `quantize`,
    `calibration_file`, `do_lower_case`, ...).
    """
    if model not in export_lib.model_kinds():
        raise InputError(f"`model` must be one of {', '.join(export_lib.model_kinds())}. Received: `model={model!r}`.")
    with export_lib.model_from_checkpoint(input_path, model, num_labels, albert_config_file,
                                          spm_model_file) as (net, config, spm_model_file):
        return export_tflite(net, output_dir, spm_model_file=spm_model_file, config=config, **export_kwargs)


def find_export(source):
    """`(tflite path, metadata dict)` when `source` is a `.tflite` file of `export_tflite` or its directory,
    else None."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = os.fspath(source)
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    meta_path = os.path.join(directory, METADATA_FILE)
    if not (path.endswith(".tflite") and os.path.isfile(path)) and not os.path.isdir(path):
        return None
    if not os.path.isfile(meta_path):
        if path.endswith(".tflite"):
            raise InputError(f"`{path}` has no `{METADATA_FILE}` beside it: export it with `albert-export "
                             "--format=tflite` (or `albert_tf.lite.export_tflite`).")
        return None
    with open(meta_path, encoding="utf-8") as f:
        metadata = json.load(f)
    if metadata.get("format") != METADATA_FORMAT:
        raise InputError(f"`{meta_path}`: expected format {METADATA_FORMAT!r}, found {metadata.get('format')!r}.")
    model_path = path if path.endswith(".tflite") else os.path.join(directory, metadata["model_file"])
    return model_path, metadata


# --- Running -----------------------------------------------------------------------------------------------


def _interpreter_class():
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        Interpreter = tf.lite.Interpreter
    return Interpreter


def default_num_threads():
    """The CPU cores this process may run on (`os.sched_getaffinity`; `os.cpu_count` where it is missing): the
    interpreter's threads when none are asked for."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def check_num_threads(num_threads):
    """`num_threads` as a positive int, or `default_num_threads()` for None; InputError otherwise."""
    if num_threads is None:
        return default_num_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 1:
        raise InputError(f"`num_threads` must be a positive int. Received: `num_threads={num_threads!r}`.")
    return int(num_threads)


def _spec(name, details):
    """The `tf.TensorSpec` of a signature tensor: its `shape_signature` (None where the export resizes)."""
    shape = details.get("shape_signature", details["shape"])
    return tf.TensorSpec([None if dim < 0 else int(dim) for dim in np.asarray(shape).tolist()],
                         tf.as_dtype(details["dtype"]), name=name)


class LiteModel:
    """Runs the `serving_default` signature of a LiteRT export on NumPy features of any batch size.

    A fixed-shape export runs in chunks of its batch, the last one padded with zero rows. An export with
    resizable inputs (`convert(..., dynamic_shapes=True)`) runs each call at the features' own shape (the
    interpreter resizes its inputs), in chunks of `batch_size` rows when given.

    Args:
        model: the path of a `.tflite` file, or its bytes.
        num_threads: optional int, the interpreter's CPU threads (XNNPACK); default: every core this process may
            run on (`default_num_threads`).
        batch_size: optional int, the most rows per run of a resizable export (default: all those given).
    """

    def __init__(self, model, num_threads=None, batch_size=None):
        interpreter_class = _interpreter_class()
        self.num_threads = check_num_threads(num_threads)
        if isinstance(model, (bytes, bytearray)):
            self.interpreter = interpreter_class(model_content=bytes(model), num_threads=self.num_threads)
        else:
            self.interpreter = interpreter_class(model_path=os.fspath(model), num_threads=self.num_threads)
        signatures = self.interpreter.get_signature_list()
        if SIGNATURE not in signatures:
            raise InputError(f"The LiteRT model has no `{SIGNATURE}` signature. Signatures: {sorted(signatures)}.")
        self.runner = self.interpreter.get_signature_runner(SIGNATURE)
        self.input_specs = {name: _spec(name, d) for name, d in self.runner.get_input_details().items()}
        self.output_specs = {name: _spec(name, d) for name, d in self.runner.get_output_details().items()}
        first = next(iter(self.input_specs.values()))
        # Resizable: the batch dimension (and the token lengths) are None in the signature.
        self.dynamic_shapes = first.shape[0] is None
        self.batch_size = batch_size if self.dynamic_shapes else int(first.shape[0])

    def __call__(self, features, output_names=None):
        """`{name: array [n, ...]}` -> `{output name: array [n, ...]}`; run in chunks of the batch size (a
        fixed-shape export's last chunk padded with zero rows)."""
        unknown = set(features) - set(self.input_specs)
        missing = set(self.input_specs) - set(features)
        if unknown or missing:
            raise InputError(f"The LiteRT model takes {sorted(self.input_specs)}. Missing: {sorted(missing)}, "
                             f"unexpected: {sorted(unknown)}.")
        arrays = {name: np.asarray(value, np.int32) for name, value in features.items()}
        for name, value in arrays.items():
            expected = tuple(self.input_specs[name].shape[1:])
            if len(value.shape) != len(expected) + 1 or any(
                    dim is not None and dim != got for dim, got in zip(expected, value.shape[1:])):
                what = "fixed shape" if not self.dynamic_shapes else "shape; None: any size"
                raise InputError(f"`{name}` must have shape [n, {', '.join(map(str, expected))}] (the export's "
                                 f"{what}). Received: {list(value.shape)}.")
        count = next(iter(arrays.values())).shape[0]
        names = list(output_names or self.output_specs)
        chunk = self.batch_size or max(count, 1)
        chunks = {name: [] for name in names}
        for start in range(0, count, chunk):
            batch = {}
            for name, value in arrays.items():
                part = value[start:start + chunk]
                pad = chunk - part.shape[0] if not self.dynamic_shapes else 0
                batch[name] = np.concatenate([part, np.zeros((pad,) + part.shape[1:], np.int32)]) if pad else part
            outputs = self.runner(**batch)
            for name in names:
                chunks[name].append(outputs[name][:min(chunk, count - start)])
        return {name: np.concatenate(parts) for name, parts in chunks.items()}


def load_config(model_path, metadata):
    """The `AlbertConfig` saved beside a LiteRT export."""
    return AlbertConfig.from_json_file(os.path.join(os.path.dirname(model_path), metadata["config_file"]))
