"""ONNX Runtime for Cortex APIs: the session, and the sample → input conversion rules of Cortex 0.9.2+.

onnxruntime is an optional extra, imported only here and only when an ONNX API is served.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inferd.core.types import Array
from inferd.dialects.cortex.errors import CortexError
from inferd.dialects.frameworks.onnx import ONNX_DTYPES as ONNX_DTYPES
from inferd.dialects.frameworks.onnx import open_session as open_session
from inferd.dialects.frameworks.onnx import require_onnxruntime as require_onnxruntime
from inferd.dialects.frameworks.onnx import tensor_specs as tensor_specs


def signature_body(node_args: list[Any]) -> dict[str, Any]:
    """``GET <endpoint>/signature``: raw NodeArg shapes and numpy type names."""
    return {arg.name: {"shape": list(arg.shape), "type": _type_name(arg.type)} for arg in node_args}


def _type_name(onnx_type: str) -> str:
    dtype = ONNX_DTYPES.get(onnx_type)
    return onnx_type if dtype is None else dtype.name


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
