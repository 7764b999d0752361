"""The one entrance every protocol calls. Protocols decode, call the data plane, and encode.

Everything two protocols would otherwise both do lives here: resolving the model, checking inputs
against its declared metadata, selecting outputs, hiding model failures behind a generic error, and
counting metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Set
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from inferd.core import metrics
from inferd.core.errors import InferdError, InferenceFailed, InvalidInput
from inferd.core.limits import Gate
from inferd.core.registry import ModelRegistry
from inferd.core.types import (
    InferenceRequest,
    InferenceResponse,
    ModelMetadata,
    ServerMetadata,
    Tensors,
    datatype_of,
)

logger = logging.getLogger("inferd.dataplane")
T = TypeVar("T")


@dataclass(frozen=True)
class ModelIndexEntry:
    name: str
    version: str
    state: str
    reason: str


class DataPlane:
    def __init__(
        self, registry: ModelRegistry, server: ServerMetadata, gates: Mapping[str, Gate] | None = None
    ) -> None:
        self.registry = registry
        self.server = server
        #: Models with a concurrency limit or a request timeout; the others run ungated.
        self.gates = dict(gates or {})

    async def run(self, name: str, work: Callable[[], Awaitable[T]]) -> T:
        """``await work()``, a call of model ``name``'s code, within that model's concurrency limit and
        request timeout. Every protocol calls model code through here (V2 through `infer`)."""
        gate = self.gates.get(name)
        if gate is None:
            return await work()
        return await gate.run(work)

    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        return self.registry.all_ready()

    def model_ready(self, name: str, version: str | None = None) -> bool:
        return self.registry.entry(name, version).ready

    def server_metadata(self) -> ServerMetadata:
        return self.server

    def model_metadata(self, name: str, version: str | None = None) -> ModelMetadata:
        metadata = self.registry.ready_entry(name, version).metadata
        assert metadata is not None
        return metadata

    async def infer(
        self, name: str, version: str | None, request: InferenceRequest, protocol: str
    ) -> InferenceResponse:
        entry = self.registry.ready_entry(name, version)  # before counting: labels only for served models
        model, metadata = entry.model, entry.metadata
        assert model is not None and metadata is not None
        counted = metrics.series(name, protocol)
        started, ok = counted.begin(), False
        try:
            _check_inputs(metadata, request)
            if metadata.outputs:
                _check_requested_outputs(name, request, metadata.output_names)
            try:
                response = await self.run(name, lambda: model.infer(request))
                outputs = _as_arrays(response.outputs)
            except InferdError:
                raise
            except Exception as exc:
                logger.exception("model %s raised while answering request %s", name, request.id or "-")
                raise InferenceFailed(name) from exc
            if request.outputs is not None:
                _check_requested_outputs(name, request, outputs.keys())
                outputs = {wanted.name: outputs[wanted.name] for wanted in request.outputs}
            response.outputs = outputs
            response.model_name, response.model_version, response.id = name, model.version, request.id
            ok = True
            return response
        finally:
            counted.end(started, ok)

    def repository_index(self, ready_only: bool = False) -> list[ModelIndexEntry]:
        return [
            ModelIndexEntry(entry.name, entry.version or "", entry.state.value, entry.reason)
            for entry in self.registry.entries()
            if entry.ready or not ready_only
        ]

    async def load_model(self, name: str) -> None:
        await self.registry.load(name)

    async def unload_model(self, name: str) -> None:
        await self.registry.unload(name)


def _check_inputs(metadata: ModelMetadata, request: InferenceRequest) -> None:
    """Reject inputs the model did not declare, misses, and datatype or shape mismatches."""
    if not metadata.inputs:
        return
    specs = metadata.input_specs
    for name, array in request.inputs.items():
        spec = specs.get(name)
        if spec is None:
            raise InvalidInput(f"unknown input '{name}'; model '{metadata.name}' takes {sorted(specs)}")
        problem = spec.accepts(array)
        if problem:
            raise InvalidInput(problem)
    missing = specs.keys() - request.inputs.keys()
    if missing:
        raise InvalidInput(f"missing input(s) {sorted(missing)} for model '{metadata.name}'")


def _check_requested_outputs(model: str, request: InferenceRequest, known: Set[str]) -> None:
    if request.outputs is None:
        return
    for wanted in request.outputs:
        if wanted.name not in known:
            raise InvalidInput(f"unknown output '{wanted.name}'; model '{model}' returns {sorted(known)}")


def _as_arrays(outputs: Tensors) -> Tensors:
    """Model outputs as numpy arrays of a datatype every protocol can carry (else a model bug)."""
    arrays = {
        name: value if isinstance(value, np.ndarray) else np.asarray(value) for name, value in outputs.items()
    }
    for array in arrays.values():
        datatype_of(array)
    return arrays
