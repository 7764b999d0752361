"""ONNX Runtime as both the Cortex room and the model-file runtimes open it: a CPU session and the
V2 tensor specs of its NodeArgs (onnxruntime is the ``onnx`` extra, imported when a model opens)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import MissingExtra
from inferd.core.types import TensorSpec, datatype_of

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
    """A CPU session of the model at ``path``, its own warnings quiet."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


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
