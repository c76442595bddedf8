"""Reads and writes the safetensors format with numpy alone, one tensor at a time.

A safetensors file is an 8-byte little-endian header length `n`, `n` bytes of JSON (`{name: {"dtype",
"shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`, offsets relative to the end of the
header), then the raw little-endian tensor bytes. Reading checks every entry against the file size before any
value is used, so a truncated or inconsistent file is an error that names it, then reads one tensor's bytes
when it is asked for (into one buffer, no mapping of the whole file). Writing takes the header from the shapes
and streams the values in order, so the whole model never exists twice in memory.
"""

import json
import os
import struct

import numpy as np

from albert_tf import fileio
from albert_tf.errors import InputError

# safetensors dtype names -> numpy dtypes (little-endian). BF16 is read as float32 (exactly).
DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_NAMES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64",
          np.dtype("<i4"): "I32"}
_MAX_HEADER = 100 * 1024 * 1024   # The reference implementation's limit.


class SafetensorsFile:
    """The tensors of one `.safetensors` file, read lazily.

    Args:
        path: str, the file.

    Attributes:
        path: str.
        shapes: dict name -> shape tuple, in file order.
        dtypes: dict name -> safetensors dtype name (`F32`, ...).
        metadata: dict, the `__metadata__` entry (possibly empty).

    Raises:
        ValueError: naming the file, when it is truncated, its header is not valid, or entries overlap or
            leave the data section.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise InputError(f"`{self.path}` is not a safetensors file: {size} bytes, shorter than the "
                                 "8-byte header length.")
            (header_len,) = struct.unpack("<Q", head)
            if header_len > min(_MAX_HEADER, size - 8):
                raise InputError(f"`{self.path}` is truncated or not a safetensors file: its header length "
                                 f"{header_len} exceeds the file ({size} bytes).")
            try:
                header = json.loads(f.read(header_len).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise InputError(f"`{self.path}` is not a safetensors file: the header is not JSON ({e}).") from None
        if not isinstance(header, dict):
            raise InputError(f"`{self.path}`: the safetensors header is not a JSON object.")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + header_len
        data_size = size - self._data_start
        self.shapes, self.dtypes, self._offsets = {}, {}, {}
        spans = []
        for name, entry in header.items():
            try:
                dtype, shape, (begin, end) = entry["dtype"], tuple(int(d) for d in entry["shape"]), \
                    entry["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise InputError(f"`{self.path}`: malformed header entry for `{name}`: {entry!r}.") from None
            if dtype not in DTYPES:
                raise InputError(f"`{self.path}`: tensor `{name}` has unsupported dtype `{dtype}` "
                                 f"(supported: {', '.join(DTYPES)}).")
            expected = int(np.prod(shape, dtype=np.int64)) * DTYPES[dtype].itemsize
            if not 0 <= begin <= end or end - begin != expected:
                raise InputError(f"`{self.path}`: tensor `{name}` ({dtype} {list(shape)}) needs {expected} bytes; "
                                 f"its data_offsets are [{begin}, {end}].")
            if end > data_size:
                raise InputError(f"`{self.path}` is truncated: tensor `{name}` ends at byte {end} of the data "
                                 f"section, which has {data_size} bytes.")
            spans.append((begin, end, name))
            self.shapes[name], self.dtypes[name], self._offsets[name] = shape, dtype, begin
        position = 0
        for begin, end, name in sorted(spans):
            if begin < position:
                raise InputError(f"`{self.path}`: tensor `{name}` overlaps the tensor before it.")
            position = end

    def read(self, name):
        """The value of `name` as a new numpy array (BF16 is converted to float32)."""
        dtype, shape, begin = DTYPES[self.dtypes[name]], self.shapes[name], self._offsets[name]
        value = np.empty(shape, dtype)
        with open(self.path, "rb") as f:
            f.seek(self._data_start + begin)
            read = f.readinto(memoryview(value.reshape(-1).view(np.uint8))) if value.size else 0
        if read != value.nbytes:
            raise InputError(f"`{self.path}` is truncated: `{name}` has {read} of {value.nbytes} bytes.")
        if self.dtypes[name] == "BF16":
            return (value.astype(np.uint32) << 16).view(np.float32)
        return value


def write_safetensors(path, entries, metadata=None):
    """Writes a safetensors file atomically, one tensor at a time.

    Args:
        path: str, the output file.
        entries: list of `(name, shape, numpy dtype, producer)`; `producer()` returns the value (an array of
            that shape, converted to the dtype) when its turn comes, so only one value is held at a time.
        metadata: optional dict str -> str, stored as `__metadata__`.
    """
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, shape, dtype, _ in entries:
        dtype = np.dtype(dtype).newbyteorder("<")
        if dtype not in _NAMES:
            raise InputError(f"Cannot write `{name}` with dtype {dtype} to safetensors.")
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        header[name] = {"dtype": _NAMES[dtype], "shape": [int(d) for d in shape],
                        "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)   # Aligns the data section, as the reference writer does.
    with fileio.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(encoded)))
            f.write(encoded)
            for name, shape, dtype, producer in entries:
                value = np.ascontiguousarray(producer(), dtype=np.dtype(dtype).newbyteorder("<"))
                if value.shape != tuple(shape):
                    raise InputError(f"`{name}`: produced shape {list(value.shape)}, header says {list(shape)}.")
                if value.size:
                    f.write(value.reshape(-1).view(np.uint8).data)
