"""The one entrance every protocol calls. Protocols decode, call the data plane, and encode.

Everything two protocols would otherwise both do lives here: resolving the model, checking it is
ready, admitting the call within the model's concurrency limit and timeout, counting and timing it
(`DataPlane.call`, which every protocol and dialect enters), and for V2's tensors checking inputs
against the model's declared metadata, selecting outputs and hiding model failures behind a generic
error (`DataPlane.infer`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Set
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

import numpy as np

from inferd.core import classification, metrics, model_config, tracing
from inferd.core.errors import InferdError, InferenceFailed, InvalidInput
from inferd.core.limits import Gate, Gates, Limits
from inferd.core.model import Model
from inferd.core.payloads import PayloadLog
from inferd.core.registry import ModelEntry, ModelRegistry
from inferd.core.types import (
    InferenceRequest,
    InferenceResponse,
    ModelMetadata,
    RequestedOutput,
    ServerMetadata,
    Tensors,
    datatype_of,
)

logger = logging.getLogger("inferd.dataplane")
T = TypeVar("T")
M = TypeVar("M", bound=Model)
#: The most values an input may hold to be kept as a model's last request (`DataPlane.last_inputs`).
SMALL_INPUT = 256


class ModelCall(Generic[M]):
    """One call of a served model, from its admission to its answer: ``with dataplane.call(...) as
    call`` counts it in flight and times it; ``call.run(work)`` runs the model's code within its
    gate. The call counts as an error when the block raises or sets ``call.ok = False`` (an answer
    with an error status). A plain (not async) context manager, written as a class: this is on every
    request's path, and counting awaits nothing, while each ``async with`` or generator-based
    manager would cost coroutines to enter and leave."""

    __slots__ = (
        "_entry",
        "_gate",
        "_queued",
        "_run_end",
        "_run_start",
        "_series",
        "_started",
        "metadata",
        "model",
        "ok",
        "rows",
    )

    def __init__(
        self, entry: ModelEntry, model: M, metadata: ModelMetadata, gate: Gate | None, series: metrics.Series
    ) -> None:
        #: The model, and its metadata as read when it was loaded.
        self.model, self.metadata, self.ok = model, metadata, True
        #: The inferences (batch rows) of this call, for Triton's ``inference_count``.
        self.rows = 1
        self._entry, self._gate, self._series, self._started = entry, gate, series, 0.0
        self._run_start = self._run_end = self._queued = 0.0

    @property
    def source(self) -> str:
        """Where the model comes from (its folder), "" for a served target's models."""
        return self._entry.source

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``await work()`` within the model's concurrency limit and request timeout, if it has them;
        timed for the entry's statistics (`inferd.core.model_stats`)."""
        gate = self._gate
        self._run_start = start = time.perf_counter()
        if gate is not None:
            inner = work

            async def queued() -> T:
                self._queued = time.perf_counter() - start
                return await inner()

            work = functools.partial(gate.run, queued)
        if tracing.tracer is not None:
            with tracing.tracer.span("inferd.model"):
                result = await work()
        else:
            result = await work()
        self._run_end = time.perf_counter()
        return result

    def __enter__(self) -> ModelCall[M]:
        self._entry.inflight += 1  # an unload of the model waits for the call to leave
        self._started = self._series.begin()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ok = self.ok and kind is None
        self._series.end(self._started, ok)
        entry = self._entry
        entry.stats.record(self._started, self._run_start, self._run_end, ok, self.rows, self._queued)
        entry.inflight -= 1
        if entry.inflight == 0:
            if entry.idle is not None:  # the last call out wakes a waiting unload
                entry.idle.set()
            if entry.on_idle is not None:  # and the loads waiting for room
                entry.on_idle()


@dataclass(frozen=True)
class ModelIndexEntry:
    name: str
    version: str
    state: str
    reason: str


class DataPlane:
    def __init__(
        self,
        registry: ModelRegistry,
        server: ServerMetadata,
        gates: Gates | None = None,
        payloads: PayloadLog | None = None,
    ) -> None:
        self.registry = registry
        #: Where protocols log the payloads of calls (`inferd.core.payloads`); None: off.
        self.payloads = payloads
        self.server = server
        #: Models with a concurrency limit or a request timeout; the others run ungated.
        self.gates = gates if gates is not None else Gates(lambda name: Limits())
        #: The ``config`` each model's last repository load was given (`model_config.with_given`).
        self.given_configs: dict[str, dict[str, Any]] = {}
        #: Each model's last V2 inputs answered without error, small ones only (`SMALL_INPUT`): the
        #: try-it page starts its form from them when the model has no example of its own.
        self.last_inputs: dict[str, Tensors] = {}

    def call(self, name: str, protocol: str, kind: type[M], version: str | None = None) -> ModelCall[M]:
        """A call of model ``name`` over ``protocol``, to enter with ``with``: `ModelNotFound` or
        `ModelNotReady` before anything is counted (labels only for served models). ``kind`` is the
        model class the caller's dialect serves, checked so the caller gets its own type."""
        entry = self.registry.ready_entry(name, version)
        model, metadata = entry.model, entry.metadata
        assert isinstance(model, kind) and metadata is not None
        if tracing.tracer is not None:
            tracing.tracer.model(name, protocol)
        return ModelCall(entry, model, metadata, self.gates[name], metrics.series(name, protocol))

    async def run(self, name: str, work: Callable[[], Awaitable[T]]) -> T:
        """``await work()``, a call of model ``name``'s code outside an inference (training, feedback
        to a graph), within that model's concurrency limit and request timeout."""
        gate = self.gates[name]
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
        registry = self.registry
        if registry.max_loaded is not None and not registry.touch(name, version):
            await registry.ensure_loaded(name, version)  # models load when called, within a limit
        with self.call(name, protocol, Model, version) as call:
            model, metadata = call.model, call.metadata
            _check_inputs(metadata, request)
            if metadata.batched and request.inputs:
                first = next(iter(request.inputs.values()))
                call.rows = first.shape[0] if first.ndim else 1
            if metadata.outputs:
                _check_requested_outputs(name, request, metadata.output_names)
            try:
                response = await call.run(lambda: model.infer(request))
                outputs = _as_arrays(response.outputs)
            except InferdError:
                raise
            except Exception as exc:
                logger.exception("model %s raised while answering request %s", name, request.id or "-")
                raise InferenceFailed(name) from exc
            if request.outputs is not None:
                _check_requested_outputs(name, request, outputs.keys())
                outputs = {wanted.name: outputs[wanted.name] for wanted in request.outputs}
                for wanted in request.outputs:
                    if wanted.parameters and "classification" in wanted.parameters:
                        outputs[wanted.name] = self._classified(call, wanted, outputs[wanted.name])
            response.outputs = outputs
            response.model_name, response.model_version, response.id = name, model.version, request.id
            if all(
                getattr(value, "size", SMALL_INPUT + 1) <= SMALL_INPUT for value in request.inputs.values()
            ):
                self.last_inputs[name] = request.inputs
            return response

    def model_config(self, name: str, version: str | None = None) -> dict[str, Any]:
        """Triton's model configuration of a ready model (`inferd.core.model_config`)."""
        entry = self.registry.ready_entry(name, version)
        assert entry.metadata is not None
        labelled = classification.labels_of(entry.model, entry.source) is not None
        derived = model_config.derived_config(
            entry.metadata, entry.model, entry.dialect or "python", labelled
        )
        return model_config.with_given(derived, self.given_configs.get(name))

    def model_statistics(self, name: str | None = None, version: str | None = None) -> list[dict[str, Any]]:
        """Triton's ``model_stats`` (`inferd.core.model_stats`): of every loaded model and version
        (no ``name``), of the loaded versions of ``name``, or of one version; unknown ones are
        `ModelNotFound`."""
        registry = self.registry
        if not name:
            entries = [entry for entry in registry.entries() if entry.ready]
        elif version:
            entries = [registry.entry(name, version)]
        else:
            versions = registry.versions(name)
            entries = [entry for entry in versions if entry.ready] or [registry.entry(name)]
        return [entry.stats.body(entry.name, entry.version or "", entry.model) for entry in entries]

    def _classified(self, call: ModelCall[Model], wanted: RequestedOutput, array: Any) -> Any:
        """Triton's classification of one output (`inferd.core.classification`)."""
        count = classification.class_count(wanted.name, wanted.parameters["classification"])
        labels = classification.labels_of(call.model, call.source)
        return classification.classify(wanted.name, array, count, call.metadata.batched, labels)

    def repository_index(self, ready_only: bool = False) -> list[ModelIndexEntry]:
        return [
            ModelIndexEntry(entry.name, entry.version or "", entry.state.value, entry.reason)
            for entry in self.registry.entries()
            if entry.ready or not ready_only
        ]

    async def load_model(
        self,
        name: str,
        version: str | None = None,
        config: Mapping[str, Any] | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        """Load ``name``; with ``config`` or ``files`` (tritonclient's load), first write them into
        the model repository as the model's settings and files."""
        if config is not None or files:
            await asyncio.to_thread(self.registry.write, name, config, files or {})
        await self.registry.load(name, version)
        if config is not None:
            self.given_configs[name] = dict(config)
        elif files:  # new files, settings of their own: the config given before is gone
            self.given_configs.pop(name, None)

    async def unload_model(self, name: str, version: str | None = None) -> None:
        await self.registry.unload(name, version)


def _check_inputs(metadata: ModelMetadata, request: InferenceRequest) -> None:
    """Reject inputs the model did not declare, misses, and datatype or shape mismatches (none for a
    model whose declared inputs are loose: it checks its inputs itself)."""
    if not metadata.inputs or metadata.loose_inputs:
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
