"""A SavedModel client on TensorFlow's C API through `ctypes`, as a C/C++/Java program linking plain TensorFlow.

Run as a script in a fresh process: `python c_api_client.py <spec.json> <inputs.npz> <outputs.npz> <report.json>`.
It never imports TensorFlow's Python package: it finds the installed package directory with
`importlib.util.find_spec` (which does not import it) and loads its two shared libraries,
`libtensorflow_framework.so.2` (status, buffers, tensors) and `libtensorflow_cc.so.2` (graphs, sessions, the
SavedModel loader, `TF_LoadLibrary`). Each export loads with `TF_LoadSessionFromSavedModel` (tag `serve`: the
restore and init ops run in the session, as TF Serving's C++ loader does) and runs with `TF_SessionRun` on the
SignatureDef's tensor names, which the spec gives (the parent reads them from `saved_model.pb`).

The spec is JSON: `{"runs": [run...], "text": {"export_dir", "libraries", "run"}}`; a run is
`{"name", "export_dir", "inputs": {tensor name: key in inputs.npz}, "outputs": {key in outputs.npz: tensor name}}`.
The `text` part loads an export that uses tensorflow-text ops twice: first as is, which must fail, then after
`TF_LoadLibrary` of each op library, after which its run runs. The report holds `TF_Version()`, the failed load's
status, each library's registered ops (`TF_GetOpList`, serialized `OpList` bytes in outputs.npz), the core op
registry (`TF_GetAllOpList` before any library loads) and whether `tensorflow` is in `sys.modules` at the end.
"""

import ctypes
import importlib.util
import json
import os
import sys

import numpy as np

# TF_DataType values (tensorflow/c/tf_datatype.h) of the dtypes the exports' token signatures use.
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 10: np.bool_}
TF_DTYPE = {np.dtype(v): k for k, v in DTYPES.items()}


class TF_Output(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


class TF_Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("length", ctypes.c_size_t), ("data_deallocator", ctypes.c_void_p)]


P = ctypes.c_void_p
# (library, function, result type, argument types); which library defines which symbol is per
# `nm -D --defined-only` of the two libraries.
PROTOTYPES = [
    ("framework", "TF_NewStatus", P, []),
    ("framework", "TF_DeleteStatus", None, [P]),
    ("framework", "TF_GetCode", ctypes.c_int, [P]),
    ("framework", "TF_Message", ctypes.c_char_p, [P]),
    ("framework", "TF_AllocateTensor", P, [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                           ctypes.c_size_t]),
    ("framework", "TF_DeleteTensor", None, [P]),
    ("framework", "TF_TensorType", ctypes.c_int, [P]),
    ("framework", "TF_NumDims", ctypes.c_int, [P]),
    ("framework", "TF_Dim", ctypes.c_int64, [P, ctypes.c_int]),
    ("framework", "TF_TensorData", P, [P]),
    ("framework", "TF_TensorByteSize", ctypes.c_size_t, [P]),
    ("framework", "TF_DeleteBuffer", None, [ctypes.POINTER(TF_Buffer)]),
    ("cc", "TF_Version", ctypes.c_char_p, []),
    ("cc", "TF_NewGraph", P, []),
    ("cc", "TF_DeleteGraph", None, [P]),
    ("cc", "TF_NewSessionOptions", P, []),
    ("cc", "TF_DeleteSessionOptions", None, [P]),
    ("cc", "TF_LoadSessionFromSavedModel", P, [P, P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                               P, P, P]),
    ("cc", "TF_GraphOperationByName", P, [P, ctypes.c_char_p]),
    ("cc", "TF_SessionRun", None, [P, P, ctypes.POINTER(TF_Output), ctypes.POINTER(P), ctypes.c_int,
                                   ctypes.POINTER(TF_Output), ctypes.POINTER(P), ctypes.c_int, ctypes.POINTER(P),
                                   ctypes.c_int, P, P]),
    ("cc", "TF_CloseSession", None, [P, P]),
    ("cc", "TF_DeleteSession", None, [P, P]),
    ("cc", "TF_LoadLibrary", P, [ctypes.c_char_p, P]),
    ("cc", "TF_GetOpList", TF_Buffer, [P]),
    ("cc", "TF_GetAllOpList", ctypes.POINTER(TF_Buffer), []),
]


class CApiError(RuntimeError):
    def __init__(self, code, message):
        super().__init__(f"TF_Code {code}: {message}")
        self.code, self.message = code, message


def package_dir(name):
    """The installed package's directory, found without importing the package."""
    return os.path.dirname(importlib.util.find_spec(name).origin)


class CApi:
    """The C API's functions as attributes (`api.TF_SessionRun`), from the installed tensorflow package."""

    def __init__(self):
        tf_dir = package_dir("tensorflow")
        # RTLD_GLOBAL: the op libraries loaded later resolve their TensorFlow symbols against these.
        libs = {name: ctypes.CDLL(os.path.join(tf_dir, f"libtensorflow_{name}.so.2"), mode=ctypes.RTLD_GLOBAL)
                for name in ("framework", "cc")}
        for lib, name, restype, argtypes in PROTOTYPES:
            function = getattr(libs[lib], name)
            function.restype, function.argtypes = restype, argtypes
            setattr(self, name, function)

    def check(self, status):
        code = self.TF_GetCode(status)
        if code != 0:
            raise CApiError(code, self.TF_Message(status).decode("utf-8", "replace"))

    def call(self, function, *args):
        """`function(*args, status)`, raising `CApiError` on a status other than OK."""
        status = self.TF_NewStatus()
        try:
            result = function(*args, status)
            self.check(status)
            return result
        finally:
            self.TF_DeleteStatus(status)

    def to_tensor(self, array):
        array = np.ascontiguousarray(array)
        dims = (ctypes.c_int64 * array.ndim)(*array.shape)
        tensor = self.TF_AllocateTensor(TF_DTYPE[array.dtype], dims, array.ndim, array.nbytes)
        ctypes.memmove(self.TF_TensorData(tensor), array.ctypes.data, array.nbytes)
        return tensor

    def from_tensor(self, tensor):
        dtype = np.dtype(DTYPES[self.TF_TensorType(tensor)])
        shape = [self.TF_Dim(tensor, i) for i in range(self.TF_NumDims(tensor))]
        nbytes = self.TF_TensorByteSize(tensor)
        assert nbytes == dtype.itemsize * int(np.prod(shape)), (shape, dtype, nbytes)
        return np.frombuffer(ctypes.string_at(self.TF_TensorData(tensor), nbytes), dtype=dtype).reshape(shape).copy()


class SavedModelSession:
    """One export in a session: `TF_LoadSessionFromSavedModel` with the `serve` tag, then `TF_SessionRun`."""

    def __init__(self, api, export_dir):
        self.api = api
        self.graph = api.TF_NewGraph()
        options = api.TF_NewSessionOptions()
        tags = (ctypes.c_char_p * 1)(b"serve")
        try:
            self.session = api.call(api.TF_LoadSessionFromSavedModel, options, None, export_dir.encode(), tags, 1,
                                    self.graph, None)
        except CApiError:
            api.TF_DeleteGraph(self.graph)
            raise
        finally:
            api.TF_DeleteSessionOptions(options)

    def output(self, tensor_name):
        """`TF_Output` of a SignatureDef tensor name, `<operation>:<index>`."""
        op_name, index = tensor_name.rsplit(":", 1)
        operation = self.api.TF_GraphOperationByName(self.graph, op_name.encode())
        if not operation:
            raise KeyError(f"no operation {op_name!r} in the loaded graph")
        return TF_Output(operation, int(index))

    def run(self, feeds, fetches):
        """`{tensor name: array}` fed, `[tensor name]` fetched: the fetched arrays, in order."""
        api = self.api
        names = list(feeds)
        inputs = (TF_Output * len(names))(*[self.output(n) for n in names])
        values = (P * len(names))(*[api.to_tensor(feeds[n]) for n in names])
        outputs = (TF_Output * len(fetches))(*[self.output(n) for n in fetches])
        results = (P * len(fetches))()
        try:
            api.call(api.TF_SessionRun, self.session, None, inputs, values, len(names), outputs, results,
                     len(fetches), None, 0, None)
            return [api.from_tensor(results[i]) for i in range(len(fetches))]
        finally:
            for tensor in list(values) + [r for r in results if r]:
                api.TF_DeleteTensor(tensor)

    def close(self):
        self.api.call(self.api.TF_CloseSession, self.session)
        self.api.call(self.api.TF_DeleteSession, self.session)
        self.api.TF_DeleteGraph(self.graph)


def run_export(api, run, inputs, got):
    session = SavedModelSession(api, run["export_dir"])
    try:
        keys = list(run["outputs"])
        values = session.run({name: inputs[key] for name, key in run["inputs"].items()},
                             [run["outputs"][k] for k in keys])
    finally:
        session.close()
    got.update(zip(keys, values))


def main(spec_file, inputs_file, outputs_file, report_file):
    with open(spec_file) as f:
        spec = json.load(f)
    inputs = dict(np.load(inputs_file))
    api = CApi()
    core_ops = api.TF_GetAllOpList()
    got = {"core_op_list": np.frombuffer(ctypes.string_at(core_ops.contents.data, core_ops.contents.length),
                                         dtype=np.uint8)}
    api.TF_DeleteBuffer(core_ops)
    report = {"version": api.TF_Version().decode()}
    for run in spec["runs"]:
        run_export(api, run, inputs, got)
    text = spec.get("text")
    if text:
        try:
            SavedModelSession(api, text["export_dir"]).close()
            report["load_without_libraries"] = {"code": 0, "message": ""}
        except CApiError as e:
            report["load_without_libraries"] = {"code": e.code, "message": e.message}
        for i, path in enumerate(text["libraries"]):
            library = api.call(api.TF_LoadLibrary, path.encode())
            ops = api.TF_GetOpList(library)   # The library's buffer, owned by the library handle.
            got[f"library_op_list/{i}"] = np.frombuffer(ctypes.string_at(ops.data, ops.length), dtype=np.uint8)
        run_export(api, text["run"], inputs, got)
    report["tensorflow_imported"] = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
    np.savez(outputs_file, **got)
    with open(report_file, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
