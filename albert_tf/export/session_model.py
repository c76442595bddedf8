"""`SessionModel`: a SavedModel loaded and run the way TF Serving runs it.

`tensorflow_model_server` loads a SavedModel with the C++ `LoadSavedModel`: the restore op and the init op of
the MetaGraph tagged `serve` run in a TF1 session, then each request is one `Session::Run` that feeds the
SignatureDef's input tensor names and fetches its output tensor names. `tf.compat.v1.saved_model.loader.load`
into a `tf.compat.v1.Session` is that same path from Python. `tf.saved_model.load` (the TF2 loader) is not:
it restores the objects and calls the traced functions, so a SavedModel can work there and fail in a server.

    model = SessionModel("export/1")           # needs `import tensorflow_text` first when it has `serve_text`
    model.run("serve_text", text_a=["a sentence"], text_b=[""])   # {output name: numpy array}

A model with `serve_text` holds tensorflow-text ops (`SentencepieceOp`, ...) in its graph: the process must
`import tensorflow_text` before loading it, as a model server must be built with those ops.
"""

import numpy as np
import tensorflow as tf

from albert_tf.errors import InputError

SERVE_TAG = "serve"


class SessionModel:
    """A SavedModel in a `tf.compat.v1.Session`, called by SignatureDef tensor names (TF Serving's path).

    Args:
        export_path: str, a SavedModel directory (a version directory of an export).
        tags: the MetaGraph tags to load (TF Serving loads `serve`).

    Attributes:
        signature_defs: {name: `SignatureDef` proto} of the loaded MetaGraph.
    """

    def __init__(self, export_path, tags=(SERVE_TAG,)):
        self.export_path = export_path
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph)
        with self.graph.as_default():
            meta_graph = tf.compat.v1.saved_model.loader.load(self.session, list(tags), export_path)
        # The map also holds the init op of a TF2 SavedModel (`__saved_model_init_op`), which is not served.
        self.signature_defs = {name: signature for name, signature in meta_graph.signature_def.items()
                               if not name.startswith("__")}

    def input_names(self, signature="serving_default"):
        """The input keys of `signature`, sorted."""
        return sorted(self._signature(signature).inputs)

    def output_names(self, signature="serving_default"):
        """The output keys of `signature`, sorted."""
        return sorted(self._signature(signature).outputs)

    def run(self, signature="serving_default", **inputs):
        """One `Session::Run` of `signature`: feeds its input tensors, fetches every output.

        Args:
            signature: str, the SignatureDef key.
            **inputs: {input key: array-like}; strings may be `str` or `bytes`.

        Returns:
            {output key: numpy array}.

        Raises:
            InputError: an input without rows, of another kind than its tensor's (float or string ids for an
            integer input: a session would cast 1.7 to 1), of another rank, or inputs of different batch sizes; each names the
            signature and the input. `serve_text` strings that are not UTF-8 are not refused: the graph drops the
            bytes that are not UTF-8, as the original's `convert_to_unicode` (`bytes.decode("utf-8", "ignore")`).
        """
        signature_def = self._signature(signature)
        expected = set(signature_def.inputs)
        if set(inputs) != expected:
            raise InputError(f"Signature `{signature}` of {self.export_path} takes the inputs "
                             f"{sorted(expected)}. Received: {sorted(inputs)}.")
        arrays = {name: _as_array(value) for name, value in inputs.items()}
        for name, array in sorted(arrays.items()):
            if array.ndim and array.shape[0] == 0:
                raise InputError(f"Input `{name}` of signature `{signature}` holds no rows: pass at least one.")
        _check_inputs(signature, signature_def, arrays)
        feeds = {signature_def.inputs[name].name: arrays[name] for name in arrays}
        fetches = {name: info.name for name, info in signature_def.outputs.items()}
        return self.session.run(fetches, feeds)

    def _signature(self, signature):
        if signature not in self.signature_defs:
            raise InputError(f"{self.export_path} has no signature `{signature}`; it has "
                             f"{', '.join(sorted(self.signature_defs))}.")
        return self.signature_defs[signature]

    def close(self):
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _as_array(value):
    """A numpy array to feed. Strings become an object array of bytes, built from `value` itself: numpy's
    fixed-width bytes dtype would drop the trailing NUL bytes of a serialized `tf.Example`."""
    array = np.asarray(value)
    if array.dtype.kind not in "SUO":
        return array
    if array.dtype.kind != "O" or not isinstance(value, np.ndarray):
        array = np.array(value, dtype=object)
    encode = np.vectorize(lambda s: s.encode("utf-8") if isinstance(s, str) else s, otypes=[object])
    return encode(array) if array.size else array


def _check_inputs(signature, signature_def, arrays):
    """Raises `InputError` for inputs a `Session::Run` would cast or reshape without a word, or fail on in the
    graph's words (see `SessionModel.run`)."""
    batch = {}
    for name, array in arrays.items():
        info = signature_def.inputs[name]
        dtype = tf.dtypes.as_dtype(info.dtype)
        where = f"Input `{name}` of signature `{signature}`"
        if dtype.is_integer and array.dtype.kind not in "iu":
            raise InputError(f"{where} takes {dtype.name} values. Received: {array.dtype} values"
                             f"{' (ids are whole numbers)' if array.dtype.kind == 'f' else ''}.")
        if dtype == tf.string and array.dtype.kind not in "SUO":
            raise InputError(f"{where} takes strings. Received: {array.dtype} values.")
        if not info.tensor_shape.unknown_rank:
            dims = [dim.size for dim in info.tensor_shape.dim]
            if array.ndim != len(dims):
                shape = "[" + ", ".join(("batch" if i == 0 else "?") if d == -1 else str(d) for i, d in enumerate(dims)) + "]"
                raise InputError(f"{where} takes the shape {shape} (rank {len(dims)}). Received: shape "
                                 f"{list(array.shape)}.")
            if dims and dims[0] == -1:
                batch[name] = array.shape[0]
    if len(set(batch.values())) > 1:
        sizes = ", ".join(f"{name} {size}" for name, size in sorted(batch.items()))
        raise InputError(f"The inputs of signature `{signature}` must have one batch size. Received: {sizes}.")
