"""TF Serving warm-up requests: `assets.extra/tf_serving_warmup_requests` of a SavedModel.

TF Serving replays the records of this file (a TFRecord of `tensorflow.serving.PredictionLog` protos) through
the model before it marks a version available, so the first real request does not pay for the graph's lazy
initialisation (kernels chosen, buffers allocated, the SentencePiece model parsed). `albert_tf.export.saved_model` writes one
`PredictLog` per signature: one example at the export's `max_seq_length`, with token ids of 0 (`<pad>`, valid
in every vocabulary), masks of 1, the `tf.Example` features of `serve_examples` with those values, and a short
sentence for each raw-text input.

The protos come from `tensorflow-serving-api` (the `serving` extra: `pip install "albert_tf[serving]"`).
"""

import os

import numpy as np
import tensorflow as tf

from albert_tf.errors import MissingPackageError

WARMUP_DIR = "assets.extra"
WARMUP_FILE = "tf_serving_warmup_requests"
WARMUP_TEXT = "ALBERT is a lite BERT."


def serving_apis():
    """The `tensorflow_serving.apis` modules `(predict_pb2, prediction_log_pb2)`, or None when not installed."""
    try:
        from tensorflow_serving.apis import predict_pb2, prediction_log_pb2
    except ImportError:
        return None
    return predict_pb2, prediction_log_pb2


def require_serving_apis():
    """`serving_apis()`, or a `MissingPackageError` naming the extra to install."""
    apis = serving_apis()
    if apis is None:
        raise MissingPackageError("TF Serving warm-up requests need tensorflow-serving-api: "
                                  "pip install \"albert_tf[serving]\" (or pass `warmup=False` / --nowarmup).")
    return apis


def _value(name, spec, length):
    """A warm-up value for one input of `spec` (a `tf.TensorSpec`): batch 1, `length` for the other unknown dims."""
    shape = [1] + [length if dim is None else dim for dim in spec.shape.as_list()[1:]]
    if spec.dtype == tf.string:
        return np.full(shape, WARMUP_TEXT.encode("utf-8"), dtype=object)
    fill = 1 if name.endswith("mask") else 0
    return np.full(shape, fill, dtype=spec.dtype.as_numpy_dtype)


def example_bytes(feature_spec):
    """One serialized `tf.Example` with every `FixedLenFeature` of `feature_spec` (masks of 1, other ids 0)."""
    feature = {}
    for name, spec in feature_spec.items():
        size = int(np.prod(spec.shape)) if spec.shape else 1
        values = [1 if name.endswith("mask") else 0] * size
        feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def signature_inputs(input_specs, length, examples=None):
    """`{input name: numpy value}` of one warm-up request.

    Args:
        input_specs: `{input name: tf.TensorSpec}` of the signature.
        length: int, the length of every unknown non-batch dimension (the export's `max_seq_length`).
        examples: optional bytes, the serialized `tf.Example` fed to an input named `examples`.
    """
    inputs = {}
    for name, spec in input_specs.items():
        if name == "examples" and examples is not None:
            inputs[name] = np.array([examples], dtype=object)
        else:
            inputs[name] = _value(name, spec, length)
    return inputs


def write_warmup_requests(saved_model_dir, model_name, requests):
    """Writes `<saved_model_dir>/assets.extra/tf_serving_warmup_requests`.

    Args:
        saved_model_dir: str, the SavedModel (version) directory.
        model_name: str, the `model_spec.name` of the requests (the model's name in TF Serving).
        requests: `{signature name: {input name: numpy value}}`, one request each, in this order.

    Returns:
        str, the path written.
    """
    predict_pb2, prediction_log_pb2 = require_serving_apis()
    directory = os.path.join(saved_model_dir, WARMUP_DIR)
    tf.io.gfile.makedirs(directory)
    path = os.path.join(directory, WARMUP_FILE)
    with tf.io.TFRecordWriter(path) as writer:
        for signature, inputs in requests.items():
            request = predict_pb2.PredictRequest()
            request.model_spec.name = model_name
            request.model_spec.signature_name = signature
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(path):
    """`[(signature name, {input name: numpy value})]` of a warm-up file, in file order."""
    _, prediction_log_pb2 = require_serving_apis()
    requests = []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        log = prediction_log_pb2.PredictionLog.FromString(record)
        request = log.predict_log.request
        requests.append((request.model_spec.signature_name,
                         {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}))
    return requests
