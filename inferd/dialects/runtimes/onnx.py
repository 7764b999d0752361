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
)
from inferd.dialects.frameworks.onnx import open_session, tensor_specs
from inferd.dialects.runtimes.declared import declared


class OnnxModel(Model):
    platform = "onnx_onnxv1"

    def __init__(self, path: Path, triton_config: str | None = None) -> None:
        self.path, self.triton_config = path, triton_config

    def load(self) -> None:
        self.session = open_session(self.path)
        self.input_specs, self.output_specs = declared(
            self.triton_config,
            tensor_specs(self.session.get_inputs()),
            tensor_specs(self.session.get_outputs()),
            self.path,
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
