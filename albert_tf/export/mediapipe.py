"""MediaPipe Tasks export: a LiteRT file that MediaPipe's `TextClassifier` and `TextEmbedder` run on raw text.

`export_mediapipe(model, output_dir, spm_model_file, ...)` writes the LiteRT export of `albert_tf.export.lite`
(`model.tflite` with `albert_lite.json`, `albert_config.json` and the release's SentencePiece model beside it,
so that `albert_tf.pipeline` reads it as any LiteRT export), with three differences:

* one output: a classifier's `probabilities` (MediaPipe reads each output as a classification head's scores),
  an encoder's `pooled_output` (the embedding); the fixed batch is 1;
* the SentencePiece model packed into the file is the release's model with the original's `preprocess_text`
  compiled into its normalization rules (`albert_tf.text.normalization`), so that MediaPipe's tokenizer gives
  the original's ids on raw text (capitals, accents, Unicode spaces; the exceptions are listed there); it is
  also written beside the file (`SPM_FILE`);
* the file carries the TFLite metadata flatbuffer MediaPipe reads (`metadata_schema.fbs`, file identifier
  `M001`, in the model's `TFLITE_METADATA` buffer): the inputs under the names MediaPipe's BERT preprocessor
  looks for (`ids`, `mask`, `segment_ids`), a SentencePiece tokenizer unit naming the packed model, and for a
  classifier the label file of its output (`TENSOR_AXIS_LABELS`); the packed files follow the flatbuffer as
  a zip archive, as the TFLite metadata populator packs them.

The metadata is written here with the `flatbuffers` builder (a TensorFlow dependency) field by field from
the schema, rather than with `tflite-support`'s metadata writers, which pin old NumPy and protobuf releases
and need a system `libusb`; the model flatbuffer is edited with TensorFlow's own TFLite schema module.
MediaPipe lower-cases ASCII letters itself, so an export of a cased model (`do_lower_case=False`) still
receives lower-cased ASCII there (docs/deploying_small.md).
"""

import io
import zipfile

import flatbuffers
import tensorflow as tf
from absl import logging
from tensorflow.lite.python import schema_py_generated as tflite_schema

from albert_tf import registry
from albert_tf.errors import InputError, check_export_backend
from albert_tf.export import lite
from albert_tf.export import saved_model as export_lib
from albert_tf.text import normalization

SPM_FILE = lite.MEDIAPIPE_SPM_FILE
LABELS_FILE = "labels.txt"
CLASSIFIER_TASK = "TextClassifier"   # the MediaPipe task that reads label probabilities (else `TextEmbedder`)
INPUT_NAMES = {"input_ids": "ids", "input_mask": "mask", "segment_ids": "segment_ids"}
METADATA_FIELD = "TFLITE_METADATA"
METADATA_IDENTIFIER = b"M001"
TFLITE_IDENTIFIER = b"TFL3"
MIN_PARSER_VERSION = "1.1.0"   # the SentencePiece tokenizer and input process units (metadata_schema.fbs)

# metadata_schema.fbs: enum and union values.
_TENSOR_AXIS_LABELS = 2
_FEATURE_PROPERTIES = 1          # ContentProperties
_SENTENCE_PIECE_OPTIONS = 5      # ProcessUnitOptions


# --- The metadata flatbuffer (tables built bottom-up; each field's slot is its position in the schema) --------


def _table(builder, fields):
    """Ends a table of `fields`: `(slot, kind, value)`, kind "offset" or "byte"."""
    builder.StartObject(max(slot for slot, _, _ in fields) + 1 if fields else 0)
    for slot, kind, value in fields:
        if kind == "offset":
            builder.PrependUOffsetTRelativeSlot(slot, value, 0)
        elif kind == "byte":
            builder.PrependInt8Slot(slot, value, 0)
    return builder.EndObject()


def _vector(builder, offsets):
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _float_vector(builder, values):
    builder.StartVector(4, len(values), 4)
    for value in reversed(values):
        builder.PrependFloat32(value)
    return builder.EndVector()


def _associated_file(builder, name, description, file_type=0):
    name, description = builder.CreateString(name), builder.CreateString(description)
    return _table(builder, [(0, "offset", name), (1, "offset", description)]
                  + ([(2, "byte", file_type)] if file_type else []))


def _tensor(builder, name, description, files=(), stats=None):
    """`TensorMetadata`: name, description, feature content, optional stats and associated files."""
    name, description = builder.CreateString(name), builder.CreateString(description)
    properties = _table(builder, [])
    content = _table(builder, [(0, "byte", _FEATURE_PROPERTIES), (1, "offset", properties)])
    fields = [(0, "offset", name), (1, "offset", description), (3, "offset", content)]
    if stats is not None:
        maximum, minimum = _float_vector(builder, [stats[1]]), _float_vector(builder, [stats[0]])
        fields.append((5, "offset", _table(builder, [(0, "offset", maximum), (1, "offset", minimum)])))
    if files:
        fields.append((6, "offset", _vector(builder, [_associated_file(builder, *f) for f in files])))
    return _table(builder, fields)


def metadata_buffer(input_names, task, labels=None, description="", name="ALBERT"):
    """The `ModelMetadata` flatbuffer of a MediaPipe text model.

    Args:
        input_names: the model's input names in its subgraph's order (keys of `INPUT_NAMES`).
        task: the MediaPipe task, "TextClassifier" or "TextEmbedder".
        labels: a classifier's label names (packed as `LABELS_FILE`).
        description: the model's description.
    """
    builder = flatbuffers.Builder(1024)
    inputs = [_tensor(builder, INPUT_NAMES[name], f"ALBERT's {name} (the original's feature).")
              for name in input_names]
    if task == CLASSIFIER_TASK:
        output = _tensor(builder, "probability", "The label probabilities.", stats=(0.0, 1.0),
                         files=[(LABELS_FILE, "The labels, one a line.", _TENSOR_AXIS_LABELS)])
    else:
        output = _tensor(builder, "embedding", "The encoder's pooled output.")
    spm_file = _associated_file(builder, SPM_FILE, "The SentencePiece model with ALBERT's text normalization.")
    options = _table(builder, [(0, "offset", _vector(builder, [spm_file]))])
    unit = _table(builder, [(0, "byte", _SENTENCE_PIECE_OPTIONS), (1, "offset", options)])
    subgraph = _table(builder, [(2, "offset", _vector(builder, inputs)), (3, "offset", _vector(builder, [output])),
                                (5, "offset", _vector(builder, [unit]))])
    name = builder.CreateString(name)
    text = builder.CreateString(description)
    version = builder.CreateString(MIN_PARSER_VERSION)
    root = _table(builder, [(0, "offset", name), (1, "offset", text), (3, "offset", _vector(builder, [subgraph])),
                            (7, "offset", version)])
    builder.Finish(root, METADATA_IDENTIFIER)
    return bytes(builder.Output())


# --- The model file -------------------------------------------------------------------------------------------


def signature_input_order(flatbuffer):
    """The names of the `serving_default` inputs in the order of the subgraph's input tensors."""
    model = tflite_schema.Model.GetRootAsModel(flatbuffer, 0)
    signature = model.SignatureDefs(0)
    by_tensor = {signature.Inputs(i).TensorIndex(): signature.Inputs(i).Name().decode()
                 for i in range(signature.InputsLength())}
    subgraph = model.Subgraphs(signature.SubgraphIndex())
    return [by_tensor[subgraph.Inputs(i)] for i in range(subgraph.InputsLength())]


def with_metadata(flatbuffer, metadata, files):
    """`flatbuffer` (a LiteRT model) with `metadata` in its `TFLITE_METADATA` buffer and `files` (`{name:
    bytes}`) appended as a zip archive."""
    model = tflite_schema.ModelT.InitFromPackedBuf(bytearray(flatbuffer), 0)
    buffer = tflite_schema.BufferT()
    buffer.data = list(metadata)
    model.buffers.append(buffer)
    entry = tflite_schema.MetadataT()
    entry.name = METADATA_FIELD
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or []) if m.name != METADATA_FIELD.encode()] + [entry]
    builder = flatbuffers.Builder(len(flatbuffer) + len(metadata) + 1024)
    builder.Finish(model.Pack(builder), TFLITE_IDENTIFIER)
    out = io.BytesIO()
    out.write(builder.Output())
    with zipfile.ZipFile(out, "a") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _label_names(model, labels):
    if model.num_labels < 2:
        raise InputError("MediaPipe's TextClassifier reads label probabilities: a regression classifier "
                         f"(`num_labels={model.num_labels}`) has none; export it with --format=tflite.")
    return lite.check_labels(labels) if labels is not None else [str(i) for i in range(model.num_labels)]


def export_mediapipe(model, output_dir, spm_model_file=None, do_lower_case=True, max_seq_length=128,
                     quantize="none", calibration_file=None, labels=None, config=None, batch_size=1,
                     file_name=lite.MODEL_FILE, overwrite=False, **lengths):
    """Writes `<output_dir>/<file_name>` for MediaPipe Tasks (see the module docstring) and the LiteRT export's
    files beside it; returns the `.tflite` path.

    Args as `lite.export_tflite`'s; `model` is an `AlbertClassifier` (`TextClassifier`) or an `AlbertModel`
    (`TextEmbedder`), `spm_model_file` is required, and the batch is 1.
    """
    check_export_backend("mediapipe")
    lite.check_output_dir(output_dir, overwrite, file_name)
    spec = export_lib.serving_spec(model)
    if spec.mediapipe_task is None:
        raise InputError(f"MediaPipe's text tasks run a classifier or an encoder (TextClassifier, TextEmbedder). "
                         f"Received a `{spec.kind}` model: export it with --format=tflite.")
    task, output_name = spec.mediapipe_task
    if spm_model_file is None:
        raise InputError("The MediaPipe export packs the SentencePiece model: pass `spm_model_file`.")
    if batch_size != 1:
        raise InputError(f"MediaPipe runs one text at a time: the batch is 1. Received: `batch_size={batch_size}`.")
    if task == CLASSIFIER_TASK:
        labels = _label_names(model, labels)
    if not do_lower_case:
        logging.warning("MediaPipe lower-cases ASCII letters before the packed tokenizer: a cased model "
                        "(`do_lower_case=False`) receives lower-cased ASCII there; --format=tflite keeps the case.")
    if not tf.io.gfile.exists(spm_model_file):
        raise InputError(f"`spm_model_file` not found: `{spm_model_file}`.")
    with tf.io.gfile.GFile(spm_model_file, "rb") as f:
        packed_spm = normalization.normalized_model(f.read(), do_lower_case, spm_model_file)
    files = {SPM_FILE: packed_spm}
    if labels is not None:
        files[LABELS_FILE] = "".join(f"{label}\n" for label in labels).encode("utf-8")

    def package(flatbuffer):
        metadata = metadata_buffer(signature_input_order(flatbuffer), task, labels,
                                   f"ALBERT {spec.kind} exported by albert_tf (quantization: {quantize}).",
                                   name=f"ALBERT {spec.kind}")
        return with_metadata(flatbuffer, metadata, files)

    path = lite.export_tflite(model, output_dir, spm_model_file=spm_model_file, do_lower_case=do_lower_case,
                              max_seq_length=max_seq_length, batch_size=1, quantize=quantize,
                              calibration_file=calibration_file, config=config, labels=labels, file_name=file_name,
                              outputs=(output_name,), package=package, extra_files={SPM_FILE: packed_spm},
                              dynamic_shapes=False, overwrite=overwrite, **lengths)
    return path


def mediapipe_kinds():
    """The registered model kinds whose exports a MediaPipe text task runs."""
    return tuple(kind.name for kind in registry.kinds() if kind.serving_spec.mediapipe_task is not None)


def export_mediapipe_from_checkpoint(input_path, output_dir, model="encoder", num_labels=2, albert_config_file=None,
                                     spm_model_file=None, **export_kwargs):
    """Loads a model from any checkpoint source (as `lite.export_tflite_from_checkpoint`) and writes its MediaPipe
    export (the library side of `albert-export --format=mediapipe`); returns the `.tflite` path."""
    if model not in mediapipe_kinds():
        raise InputError(f"MediaPipe's text tasks run a classifier or an encoder (TextClassifier, TextEmbedder). "
                         f"Received: `model={model!r}`: export it with --format=tflite.")
    with export_lib.model_from_checkpoint(input_path, model, num_labels, albert_config_file,
                                          spm_model_file) as (net, config, spm_model_file):
        return export_mediapipe(net, output_dir, spm_model_file=spm_model_file, config=config, **export_kwargs)
