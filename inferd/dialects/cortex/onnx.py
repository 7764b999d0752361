"""ONNX Runtime for Cortex APIs: the session, and the sample → input conversion rules of Cortex 0.9.2+.

onnxruntime is an optional extra, imported only here and only when an ONNX API is served.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import MissingExtra
from inferd.core.types import Array, TensorSpec, datatype_of
from inferd.dialects.cortex.errors import CortexError

#: NodeArg ``.type`` → numpy dtype.
ONNX_DTYPES: dict[str, np.dtype[Any]] = {
    f"tensor({onnx})": np.dtype(numpy)
    for onnx, numpy in {
        "float16": "float16",
        "float": "float32",
        "double": "float64",
        "int8": "int8",
        "int16": "int16",
        "int32": "int32",
        "int64": "int64",
        "uint8": "uint8",
        "uint16": "uint16",
        "uint32": "uint32",
        "uint64": "uint64",
        "bool": "bool",
        "string": "object",
    }.items()
}


def require_onnxruntime() -> None:
    """Fail at startup, not at first request, when the ``onnx`` extra is missing."""
    if importlib.util.find_spec("onnxruntime") is None:
        raise MissingExtra("ONNX models need onnxruntime: pip install 'inferd[onnx]'", "onnx")


def open_session(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def signature_body(node_args: list[Any]) -> dict[str, Any]:
    """``GET <endpoint>/signature``: raw NodeArg shapes and numpy type names."""
    return {arg.name: {"shape": list(arg.shape), "type": _type_name(arg.type)} for arg in node_args}


def _type_name(onnx_type: str) -> str:
    dtype = ONNX_DTYPES.get(onnx_type)
    return onnx_type if dtype is None else dtype.name


def tensor_specs(node_args: list[Any]) -> tuple[TensorSpec, ...]:
    """V2 specs of the plain tensor NodeArgs (sequences and maps have no V2 datatype and are left out)."""
    return tuple(
        TensorSpec(
            arg.name,
            datatype_of(np.empty(0, ONNX_DTYPES[arg.type])),
            tuple(dim if isinstance(dim, int) else -1 for dim in arg.shape),
        )
        for arg in node_args
        if arg.type in ONNX_DTYPES
    )


def to_inputs(prepared: Any, node_args: list[Any]) -> dict[str, Array]:
    """The session feed for ``prepared`` (what pre_inference returned, or the sample)."""
    if len(node_args) == 1:
        arg = node_args[0]
        if isinstance(prepared, dict):
            return {arg.name: _convert(_value(prepared, arg.name), arg)}
        return {arg.name: _convert(prepared, arg)}
    if not isinstance(prepared, dict):
        keys = ", ".join(f'"{arg.name}"' for arg in node_args)
        raise CortexError(f"expected sample to be a dictionary with keys {keys}")
    return {arg.name: _convert(_value(prepared, arg.name), arg) for arg in node_args}


def _value(prepared: dict[str, Any], name: str) -> Any:
    value = prepared.get(name)
    if value is None:
        raise CortexError(f'missing key "{name}"')
    return value


def _convert(value: Any, arg: Any) -> Array:
    try:
        return _to_numpy(value, arg)
    except CortexError as exc:
        raise exc.wrap(f'key "{arg.name}"') from None


def _to_numpy(value: Any, arg: Any) -> Array:
    dtype = ONNX_DTYPES.get(arg.type)
    if dtype is None:
        raise CortexError(f"unsupported input type {arg.type}")
    shape = tuple(dim if isinstance(dim, int) else 1 for dim in arg.shape)
    try:
        if isinstance(value, np.ndarray):
            array = _cast(value, dtype)
        else:
            array = np.array(value, dtype=dtype)
        return array.reshape(shape)
    except CortexError:
        raise
    except Exception as exc:
        raise CortexError("failed to convert to numpy array", str(exc)) from None


def _cast(array: Array, dtype: np.dtype[Any]) -> Array:
    if array.dtype == dtype:
        return array
    if _is_numeric(array.dtype) != _is_numeric(dtype):
        raise CortexError(f"expected dtype '{dtype}' but found '{array.dtype.str}'")
    return array.astype(dtype)


def _is_numeric(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "biufc"
