"""ONNX models (``model.onnx``) with onnxruntime, as KServe's and Triton's ONNX runtimes serve them:
the graph's tensor inputs and outputs are the model's (names, datatypes and shapes from its
signature, checked by the data plane); outputs that are sequences or maps have no V2 datatype and
are left out. The Cortex dialect runs ONNX too, for its own request shapes; this is the bare model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput
from inferd.core.model import Model
from inferd.core.types import (
    Array,
    InferenceRequest,
    InferenceResponse,
    ModelMetadata,
    TensorSpec,
    datatype_of,
)
from inferd.dialects.runtimes.declared import declared

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


def load(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def specs(node_args: list[Any]) -> tuple[TensorSpec, ...]:
    """V2 specs of the plain tensor NodeArgs."""
    return tuple(
        TensorSpec(
            arg.name,
            datatype_of(np.empty(0, ONNX_DTYPES[arg.type])),
            tuple(dim if isinstance(dim, int) else -1 for dim in arg.shape),
        )
        for arg in node_args
        if arg.type in ONNX_DTYPES
    )


class OnnxModel(Model):
    platform = "onnx_onnxv1"

    def __init__(self, path: Path, triton_config: str | None = None) -> None:
        self.path, self.triton_config = path, triton_config

    def load(self) -> None:
        self.session = load(self.path)
        self.input_specs, self.output_specs = declared(
            self.triton_config, specs(self.session.get_inputs()), specs(self.session.get_outputs()), self.path
        )

    def metadata(self) -> ModelMetadata:
        versions = (self.version,) if self.version else ()
        return ModelMetadata(self.name, versions, self.platform, self.input_specs, self.output_specs)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        wanted = (
            [output.name for output in request.outputs]
            if request.outputs
            else [spec.name for spec in self.output_specs]
        )
        feed = {name: _fed(array) for name, array in request.inputs.items()}
        found = await self.call_user(self._run, wanted, feed)
        return InferenceResponse(dict(zip(wanted, found, strict=True)))

    def _run(self, wanted: list[str], feed: dict[str, Array]) -> list[Any]:
        try:
            return list(self.session.run(wanted, feed))
        except Exception as exc:  # onnxruntime's errors for inputs it cannot take (shapes, values)
            if type(exc).__name__ in ("InvalidArgument", "Fail", "InvalidGraph"):
                raise InvalidInput(f"model '{self.name}': {' '.join(str(exc).split())[:500]}") from None
            raise


def _fed(array: Array) -> Array:
    """BYTES (object arrays of bytes) as the strings onnxruntime takes."""
    if array.dtype == object:
        texts: Array = np.vectorize(_text, otypes=[object])(array)
        return texts
    return array


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
