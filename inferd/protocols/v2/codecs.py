"""V2 tensors ↔ numpy: JSON ``data`` (flat or nested) and the raw little-endian layout.

The raw layout serves both the REST binary tensor data extension and gRPC ``raw_*_contents``:
row-major, no padding, BOOL one byte, BYTES a 4-byte little-endian length before each element.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput
from inferd.core.types import DTYPES, Array, Parameters, RequestedOutput, datatype_of

_INT_KINDS = "iub"
_NUMBER_KINDS = "iubf"
_LENGTH = struct.Struct("<I")
#: The deepest nesting of JSON ``data``: numpy's most dimensions (``NPY_MAXDIMS``); deeper is no tensor.
MAX_DIMS = 64
#: The largest byte size numpy gives an array (of any shape, even one with a zero dimension).
_MAX_BYTES = int(np.iinfo(np.int64).max)


def dtype_of(name: str, datatype: str) -> np.dtype[Any]:
    dtype = DTYPES.get(datatype)
    if dtype is None:
        raise InvalidInput(
            f"input '{name}' has unknown datatype '{datatype}'; expected one of {sorted(DTYPES)}"
        )
    return dtype


def element_count(shape: Sequence[int]) -> int:
    return math.prod(shape)


def checked_count(name: str, shape: Sequence[int], dtype: np.dtype[Any]) -> int:
    """The element count of a client's ``shape``, checked before anything is sized from it: no
    negative dimension, and no shape numpy cannot hold (its dimensions, zeros left out, times the
    item size must fit a signed 64-bit integer; else reshaping fails with a ValueError, a 500). The
    caller then compares the count with the data it actually received."""
    if any(dim < 0 for dim in shape):
        raise InvalidInput(f"input '{name}' has shape {list(shape)}; dimensions must not be negative")
    if math.prod(dim for dim in shape if dim) * dtype.itemsize > _MAX_BYTES:
        raise InvalidInput(f"input '{name}' has shape {list(shape)}, larger than any tensor can be")
    return element_count(shape)


def decode_json(name: str, datatype: str, shape: Sequence[int], data: Any) -> Array:
    """A JSON ``data`` list (flat or nested in natural shape) as an array of ``shape``; the array is
    built from ``data`` (what was received), then compared with the shape's element count."""
    dtype = dtype_of(name, datatype)
    expected = checked_count(name, shape, dtype)
    if not isinstance(data, list):
        data = [data]
    if datatype == "BYTES":
        array = _bytes_array(name, data)
    else:
        array = _number_array(name, datatype, dtype, data)
    if array.size != expected:
        raise InvalidInput(
            f"input '{name}' has {array.size} elements but shape {list(shape)} needs {expected}"
        )
    return array.reshape(shape)


def _number_array(name: str, datatype: str, dtype: np.dtype[Any], data: list[Any]) -> Array:
    try:
        array = np.asarray(data)
    except ValueError:
        raise InvalidInput(f"input '{name}': data is not a regular nested list of numbers") from None
    if array.size == 0:
        return array.astype(dtype)
    kind = array.dtype.kind
    if dtype.kind in "iu" and kind in "fO":
        array, kind = _exact_integers(name, datatype, dtype, data), dtype.kind
    allowed = "b" if datatype == "BOOL" else _INT_KINDS if dtype.kind in "iu" else _NUMBER_KINDS
    if kind not in allowed:
        raise InvalidInput(f"input '{name}' has datatype {datatype} but its data holds {_describe(kind)}")
    if dtype.kind in "iu" and kind != "b":
        info = np.iinfo(dtype)
        if array.min() < info.min or array.max() > info.max:
            raise InvalidInput(f"input '{name}' has values outside the range of {datatype}")
    return array.astype(dtype, copy=False)


def _exact_integers(name: str, datatype: str, dtype: np.dtype[Any], data: list[Any]) -> Array:
    """Integers past float64's precision (e.g. UINT64 near 2**64) make numpy infer float or object;
    convert them exactly when every element really is an integer."""
    elements = list(_flatten(name, data))
    if not all(isinstance(element, int) and not isinstance(element, bool) for element in elements):
        kinds = {type(element).__name__ for element in elements} - {"int"}
        raise InvalidInput(
            f"input '{name}' has datatype {datatype} but its data holds {', '.join(sorted(kinds))} values"
        )
    try:
        return np.array(data, dtype=dtype)
    except (OverflowError, ValueError):
        raise InvalidInput(f"input '{name}' has values outside the range of {datatype}") from None


def _describe(kind: str) -> str:
    return {"b": "booleans", "f": "floating-point numbers", "U": "strings", "O": "mixed values"}.get(
        kind, "integers"
    )


def _bytes_array(name: str, data: list[Any]) -> Array:
    elements = list(_flatten(name, data))
    array = np.empty(len(elements), dtype=object)
    for index, element in enumerate(elements):
        if isinstance(element, str):
            array[index] = element.encode()
        elif isinstance(element, bytes):
            array[index] = element
        else:
            raise InvalidInput(f"input '{name}' has datatype BYTES but holds {type(element).__name__} values")
    return array


def _flatten(name: str, data: list[Any]) -> Iterator[Any]:
    """The elements of nested lists, row-major, without recursion (JSON may nest a thousand levels,
    past Python's recursion limit); nesting deeper than `MAX_DIMS` is InvalidInput."""
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                if len(stack) >= MAX_DIMS:
                    raise InvalidInput(f"input '{name}': data nests deeper than {MAX_DIMS} levels")
                stack.append(iter(item))
                break
            yield item
        else:
            stack.pop()


def decode_raw(name: str, datatype: str, shape: Sequence[int], raw: bytes | memoryview) -> Array:
    """Raw little-endian bytes as an array of ``shape``; numeric data is not copied (read-only). The
    shape is checked against the length of ``raw`` before anything is allocated."""
    dtype = dtype_of(name, datatype)
    count = checked_count(name, shape, dtype)
    if datatype == "BYTES":
        array = _split_bytes(name, raw, count, shape)
    else:
        if len(raw) != count * dtype.itemsize:
            raise InvalidInput(
                f"input '{name}' has {len(raw)} bytes of data but shape {list(shape)} of {datatype} "
                f"needs {count * dtype.itemsize}"
            )
        array = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
    return array.reshape(shape)


def _split_bytes(name: str, raw: bytes | memoryview, count: int, shape: Sequence[int]) -> Array:
    view = memoryview(raw)
    if count > len(view) // _LENGTH.size:  # each element takes at least its 4-byte length
        raise InvalidInput(
            f"input '{name}' has fewer BYTES elements than its shape needs: shape {list(shape)} "
            f"needs {count} elements, and {len(view)} bytes of data hold at most {len(view) // _LENGTH.size}"
        )
    array = np.empty(count, dtype=object)
    offset = 0
    for index in range(count):
        if offset + 4 > len(view):
            raise InvalidInput(f"input '{name}' has fewer BYTES elements than its shape needs")
        (length,) = _LENGTH.unpack_from(view, offset)
        offset += 4
        if offset + length > len(view):
            raise InvalidInput(f"input '{name}': a BYTES element runs past the end of the data")
        array[index] = bytes(view[offset : offset + length])
        offset += length
    if offset != len(view):
        raise InvalidInput(f"input '{name}' has more BYTES data than its shape needs")
    return array


def raw_size(datatype: str, shape: Sequence[int]) -> int | None:
    """Byte size of a fixed-width tensor; None for BYTES, whose size depends on the data."""
    if datatype == "BYTES":
        return None
    return element_count(shape) * DTYPES[datatype].itemsize


def raw_view(array: Array) -> bytes | memoryview:
    """The raw layout of ``array`` without a copy where it already is that layout (a contiguous,
    little-endian, fixed-width array: the bytes are the array's own memory); else `encode_raw`."""
    if (
        array.dtype.kind in "biuf"
        and array.dtype.byteorder != ">"
        and array.flags.c_contiguous
        and datatype_of(array) != "BYTES"
    ):
        return array.data.cast("B")
    return encode_raw(array)


def encode_raw(array: Array) -> bytes:
    """The raw layout of ``array``."""
    if datatype_of(array) == "BYTES":
        parts = []
        for element in array.ravel():
            data = _to_bytes(element)
            parts.append(_LENGTH.pack(len(data)))
            parts.append(data)
        return b"".join(parts)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.tobytes()


def _to_bytes(element: Any) -> bytes:
    if isinstance(element, bytes):
        return element
    if isinstance(element, str):
        return element.encode()
    return str(element).encode()


def encode_json(array: Array) -> Any | None:
    """Flat JSON-ready data for ``array``, or None when only the raw layout can carry it (non-UTF-8 BYTES)."""
    datatype = datatype_of(array)
    flat = array.ravel()
    if datatype == "BYTES":
        try:
            return [element.decode() if isinstance(element, bytes) else str(element) for element in flat]
        except UnicodeDecodeError:
            return None
    if datatype == "FP16":
        return flat.astype(np.float32)
    return flat


def requested_output(name: str, parameters: Parameters) -> RequestedOutput:
    """An output the client asked for (with ``classification``: Triton's classification extension,
    answered by the data plane, `inferd.core.classification`)."""
    return RequestedOutput(name, parameters)
