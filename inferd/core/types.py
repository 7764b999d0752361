"""Inference requests and responses as named numpy arrays plus parameters.

No wire format lives here: protocols translate their bodies into these types and back, so the
runtime and user code only ever see numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Tensors = dict[str, Array]
ParameterValue = str | int | float | bool
Parameters = dict[str, ParameterValue]

#: Datatype names (the V2 vocabulary, also used by Triton and KServe) and their numpy dtypes.
#: BYTES tensors are numpy object arrays holding ``bytes``.
DTYPES: dict[str, np.dtype[Any]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(np.object_),
}
_DATATYPES = {(dtype.kind, dtype.itemsize): name for name, dtype in DTYPES.items() if name != "BYTES"}


def datatype_of(array: Array) -> str:
    """The datatype name for an array; text (``U``/``S``) and object arrays are BYTES."""
    dtype = array.dtype
    name = _DATATYPES.get((dtype.kind, dtype.itemsize))
    if name is not None:
        return name
    if dtype.kind in "USO":
        return "BYTES"
    raise TypeError(f"numpy dtype {array.dtype} has no inference datatype")


@dataclass(frozen=True)
class TensorSpec:
    """The declared name, datatype and shape of a model input or output; -1 marks a free dimension."""

    name: str
    datatype: str
    shape: tuple[int, ...]

    def accepts(self, array: Array) -> str | None:
        """Why ``array`` does not fit this spec, or None when it does."""
        datatype = datatype_of(array)
        if datatype != self.datatype:
            return f"input '{self.name}' has datatype {datatype}, the model expects {self.datatype}"
        if array.ndim != len(self.shape) or not all(
            want == -1 or want == got for want, got in zip(self.shape, array.shape, strict=True)
        ):
            return f"input '{self.name}' has shape {list(array.shape)}, the model expects {list(self.shape)}"
        return None


@dataclass(frozen=True)
class ModelMetadata:
    """What a model tells clients about itself."""

    name: str
    versions: tuple[str, ...] = ()
    platform: str = "python"
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    #: Whether ``inputs`` describe what the model prefers rather than what it takes: the data plane
    #: then holds no request to their names and datatypes, and the model checks what it is given
    #: (as MLServer's runtimes do: any name, any numeric datatype, cast).
    loose_inputs: bool = False

    @cached_property
    def input_specs(self) -> dict[str, TensorSpec]:
        return {spec.name: spec for spec in self.inputs}

    @cached_property
    def batched(self) -> bool:
        """Whether the first input's first dimension is variable (-1): a batch of rows, each an
        inference in Triton's ``inference_count``, and Triton's ``max_batch_size`` is not 0."""
        return bool(self.inputs) and bool(self.inputs[0].shape) and self.inputs[0].shape[0] == -1

    @cached_property
    def output_names(self) -> frozenset[str]:
        return frozenset(spec.name for spec in self.outputs)


@dataclass(frozen=True)
class ServerMetadata:
    name: str
    version: str
    extensions: tuple[str, ...]


@dataclass(frozen=True)
class RequestedOutput:
    """One output a client asked for, with its per-output parameters (e.g. ``binary_data``)."""

    name: str
    parameters: Parameters = field(default_factory=dict)


@dataclass
class InferenceRequest:
    """Named input arrays plus request, input and output parameters."""

    inputs: Tensors
    parameters: Parameters = field(default_factory=dict)
    id: str | None = None
    outputs: list[RequestedOutput] | None = None
    input_parameters: dict[str, Parameters] = field(default_factory=dict)


@dataclass
class InferenceResponse:
    """Named output arrays, in the order they should be returned."""

    outputs: Tensors
    model_name: str = ""
    model_version: str | None = None
    id: str | None = None
    parameters: Parameters = field(default_factory=dict)
