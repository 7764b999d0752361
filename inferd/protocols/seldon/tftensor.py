"""TensorFlow ``TensorProto`` in proto-JSON ↔ numpy, without TensorFlow (Seldon's ``tftensor``).

The message is inferd's copy of TensorFlow's (same package, names and field numbers), so the
proto-JSON clients send and the bytes gRPC carries are TensorFlow's own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from google.protobuf import json_format

from inferd.protocols.seldon._generated import tensorflow_tensor_pb2 as tf_pb
from inferd.protocols.seldon.errors import SeldonError

#: DataType → (numpy dtype, the repeated field its values travel in).
DTYPES: dict[int, tuple[Any, str]] = {
    tf_pb.DT_FLOAT: (np.float32, "float_val"),
    tf_pb.DT_DOUBLE: (np.float64, "double_val"),
    tf_pb.DT_INT32: (np.int32, "int_val"),
    tf_pb.DT_UINT8: (np.uint8, "int_val"),
    tf_pb.DT_INT16: (np.int16, "int_val"),
    tf_pb.DT_INT8: (np.int8, "int_val"),
    tf_pb.DT_UINT16: (np.uint16, "int_val"),
    tf_pb.DT_INT64: (np.int64, "int64_val"),
    tf_pb.DT_BOOL: (np.bool_, "bool_val"),
    tf_pb.DT_HALF: (np.float16, "half_val"),
    tf_pb.DT_UINT32: (np.uint32, "uint32_val"),
    tf_pb.DT_UINT64: (np.uint64, "uint64_val"),
    tf_pb.DT_STRING: (object, "string_val"),
}
#: The largest tensor one repeated value may fill. TensorFlow sends a constant tensor as one value and
#: its shape; the shape is the client's word, not data received, so it may not cost gigabytes.
MAX_REPEATED_BYTES = 64 * 1024 * 1024
NUMPY_TO_DTYPE = {np.dtype(dtype): code for code, (dtype, _) in DTYPES.items() if dtype is not object}


def to_array(document: Any) -> np.ndarray:
    """The array of a proto-JSON TensorProto (``tensor_content`` or the typed ``*_val`` fields)."""
    try:
        proto = json_format.ParseDict(document, tf_pb.TensorProto())
    except (json_format.ParseError, TypeError, AttributeError) as exc:
        raise SeldonError(f"Invalid tftensor: {exc}") from None
    return proto_to_array(proto)


def proto_to_array(proto: Any) -> np.ndarray:
    if proto.dtype not in DTYPES:
        raise SeldonError(f"Invalid tftensor: dtype {tf_pb.DataType.Name(proto.dtype)} is not supported")
    dtype, field = DTYPES[proto.dtype]
    shape = [dim.size for dim in proto.tensor_shape.dim]
    if any(dim < 0 for dim in shape):
        raise SeldonError(f"Invalid tftensor: shape {shape} has a negative dimension")
    size = math.prod(shape)  # exact: numpy's prod wraps around past 2**63
    if proto.tensor_content:
        values = np.frombuffer(proto.tensor_content, dtype=dtype).copy()
    elif proto.dtype == tf_pb.DT_HALF:
        values = np.array(proto.half_val, dtype=np.uint16).view(np.float16)
    else:
        values = np.array(list(getattr(proto, field)), dtype=dtype)
    if values.size == 1 and size > 1:  # TensorFlow repeats a single value over the shape
        if size * values.itemsize > MAX_REPEATED_BYTES:
            raise SeldonError(
                f"Invalid tftensor: one value repeated over shape {shape} would take "
                f"{size * values.itemsize} bytes, more than the limit of {MAX_REPEATED_BYTES}"
            )
        values = np.full(size, values[0], dtype=values.dtype)
    try:
        reshaped: np.ndarray = values.reshape(shape)
        return reshaped
    except ValueError:
        raise SeldonError(f"Invalid tftensor: {values.size} values do not fill shape {shape}") from None


def array_to_proto(array: np.ndarray) -> Any:
    proto = tf_pb.TensorProto()
    proto.tensor_shape.dim.extend(tf_pb.TensorShapeProto.Dim(size=size) for size in array.shape)
    if array.dtype.kind in "OUS":
        proto.dtype = tf_pb.DT_STRING
        proto.string_val.extend(
            value if isinstance(value, bytes) else str(value).encode() for value in array.ravel()
        )
        return proto
    code = NUMPY_TO_DTYPE.get(array.dtype)
    if code is None:
        raise SeldonError(f"cannot send a {array.dtype} array as a tftensor")
    proto.dtype = code  # type: ignore[assignment]
    proto.tensor_content = np.ascontiguousarray(array).tobytes()
    return proto


def from_array(array: np.ndarray) -> dict[str, Any]:
    """The proto-JSON of ``array`` as a TensorProto, as TensorFlow's make_tensor_proto writes it."""
    result: dict[str, Any] = json_format.MessageToDict(array_to_proto(array))
    return result
