"""Writes the ops that a TensorFlow Text release registers (name and OpDef) as a text-format `OpList`.

TF Serving's model server embeds its own TensorFlow Text, older than the one albert_tf exports with (2.12.1 in
the server builds of tensorflow/serving PR #4057). An export whose graph uses a text op, or an op attribute,
that the server's TensorFlow Text lacks does not load there ("Op type not registered ..."). tests/export/test_serving.py
checks every export against the list this script writes for TF Text 2.12.1 (tests/data/tf_text_2_12_1_ops.pbtxt).

Run it in an environment with that TensorFlow Text and its TensorFlow (Python 3.11 has wheels of both):

    python3.11 -m venv /tmp/tf212 && /tmp/tf212/bin/pip install tensorflow==2.12.1 tensorflow-text==2.12.1
    /tmp/tf212/bin/python tests/references/tf_text_ops.py tests/data/tf_text_2_12_1_ops.pbtxt

It loads each op library that the `tensorflow_text` package ships (`TF_LoadLibrary` and `TF_GetOpList`, as
`tf.load_op_library` does: the ops that library registers, with their OpDefs), without importing the package
first and writes them sorted by name, after a header naming the versions.
"""

import glob
import importlib.metadata
import importlib.util
import os
import sys

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session


def text_ops():
    """`OpList` of every op the installed tensorflow_text's libraries register, sorted by name."""
    ops = {}
    # The package is located, not imported: importing it would load the libraries before they are listed.
    package = os.path.dirname(importlib.util.find_spec("tensorflow_text").origin)
    for library in sorted(glob.glob(os.path.join(package, "**", "*.so"), recursive=True)):
        handle = pywrap_tf_session.TF_LoadLibrary(library)
        try:
            op_list = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetOpList(handle))
        finally:
            pywrap_tf_session.TF_DeleteLibraryHandle(handle)
        for op in op_list.op:
            ops[op.name] = op
    return op_def_pb2.OpList(op=[ops[name] for name in sorted(ops)])


def main(path):
    op_list = text_ops()
    header = (f"# The ops of tensorflow-text {importlib.metadata.version('tensorflow-text')} (with tensorflow {tf.__version__}), "
              f"written by tests/references/tf_text_ops.py.\n")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(header + text_format.MessageToString(op_list))
    os.replace(path + ".tmp", path)
    print(f"{path}: {len(op_list.op)} ops")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tf_text_ops.py OUTPUT.pbtxt")
    main(sys.argv[1])
