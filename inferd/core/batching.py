"""Adaptive batching: a `Model` that holds a `Model` and runs concurrent requests as one call.

Requests wait at most ``max_batch_time_ms`` (a monotonic deadline set by the first request of a
batch) for others to join, up to ``max_batch_size`` rows. Their inputs are concatenated on axis 0,
the inner model runs once, and every output is split back by each request's row count; a model that
returns another number of rows fails that batch. A failing batch fails only its own requests. When
more than ``max_queue_size`` requests wait, new ones are shed with `Overloaded` (503 + Retry-After).

Requests are only batched with requests of the same input names, datatypes, trailing shapes and
parameters; a request of more rows than ``max_batch_size`` runs alone. Sub-millisecond models gain
most: scikit-learn's predict costs about the same for 1 row or 64.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from inferd.core import tracing
from inferd.core.errors import Overloaded
from inferd.core.model import Model, resolve
from inferd.core.types import InferenceRequest, InferenceResponse, ModelMetadata

logger = logging.getLogger("inferd.batching")

Item = TypeVar("Item")
Result = TypeVar("Result")
RunBatch = Callable[[list[Item]], Awaitable[list[Result]]]


@dataclass(frozen=True)
class BatchSettings:
    max_batch_size: int = 1
    max_batch_time_ms: float = 1.0
    max_queue_size: int = 1024

    @property
    def enabled(self) -> bool:
        return self.max_batch_size > 1


class BatchSizeMismatch(Exception):
    """The model answered a batch with another number of rows than it was given (a model bug)."""


@dataclass
class _Waiting(Generic[Item, Result]):
    item: Item
    rows: int
    key: Hashable
    future: asyncio.Future[Result] = field(repr=False)
    #: Where the request's trace stands while it waits (`inferd.core.tracing.Tracer.waiting`).
    trace: Any = field(default=None, repr=False)


class Batcher(Generic[Item, Result]):
    """Collects concurrent submissions into batches and runs each batch with one ``run`` call.

    ``run`` gets the items of a batch (same key, at most ``max_batch_size`` rows, in arrival order)
    and returns one result per item; if it raises, every item of that batch gets the error.
    """

    def __init__(self, run: RunBatch[Item, Result], settings: BatchSettings, name: str = "") -> None:
        self.run, self.settings, self.name = run, settings, name
        self._waiting: deque[_Waiting[Item, Result]] = deque()
        self._arrived: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, item: Item, rows: int, key: Hashable) -> Result:
        if len(self._waiting) >= self.settings.max_queue_size:
            raise Overloaded(f"model '{self.name}' has {len(self._waiting)} requests waiting; retry later")
        loop = asyncio.get_running_loop()
        waiting: _Waiting[Item, Result] = _Waiting(item, rows, key, loop.create_future())
        if tracing.tracer is not None:
            waiting.trace = tracing.tracer.waiting()
        self._waiting.append(waiting)
        if self._worker is None or self._worker.done():
            self._arrived = asyncio.Event()
            self._worker = loop.create_task(self._batches())
        assert self._arrived is not None
        self._arrived.set()
        return await waiting.future

    def close(self) -> None:
        """Stop forming batches; what still waits fails with `Overloaded`."""
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        for waiting in self._waiting:
            if not waiting.future.done():
                waiting.future.set_exception(Overloaded(f"model '{self.name}' is unloading"))
        self._waiting.clear()

    async def _batches(self) -> None:
        """Forms and runs batches while requests wait."""
        assert self._arrived is not None
        arrived = self._arrived
        while True:
            if not self._waiting:
                arrived.clear()
                await arrived.wait()
                continue
            deadline = time.monotonic() + self.settings.max_batch_time_ms / 1000
            while self._rows_ready() < self.settings.max_batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                arrived.clear()
                try:
                    await asyncio.wait_for(arrived.wait(), remaining)
                except asyncio.TimeoutError:
                    break
            batch = self._take()
            if batch:
                await self._settle(batch)

    def _rows_ready(self) -> int:
        """Rows waiting that could join the first waiting request's batch."""
        key = self._waiting[0].key
        return sum(waiting.rows for waiting in self._waiting if waiting.key == key)

    def _take(self) -> list[_Waiting[Item, Result]]:
        """The first request and those after it that fit its batch, in arrival order."""
        first = self._waiting[0]
        batch: list[_Waiting[Item, Result]] = []
        rows, kept = 0, deque[_Waiting[Item, Result]]()
        for waiting in self._waiting:
            if waiting.future.done():  # the client went away
                continue
            if waiting.key == first.key and rows + waiting.rows <= self.settings.max_batch_size:
                batch.append(waiting)
                rows += waiting.rows
            else:
                kept.append(waiting)
        self._waiting = kept
        return batch

    async def _settle(self, batch: list[_Waiting[Item, Result]]) -> None:
        """Hand each request its answer (or the batch's error)."""
        try:
            if tracing.tracer is None:
                results = await self.run([waiting.item for waiting in batch])
            else:
                rows = sum(waiting.rows for waiting in batch)
                with tracing.tracer.batch([waiting.trace for waiting in batch], rows):
                    results = await self.run([waiting.item for waiting in batch])
        except Exception as exc:
            for waiting in batch:
                if not waiting.future.done():
                    waiting.future.set_exception(exc)
            return
        for waiting, result in zip(batch, results, strict=True):
            if not waiting.future.done():
                waiting.future.set_result(result)


class BatchingModel(Model):
    """Batches calls to ``inner.infer``; everything else is the inner model's."""

    def __init__(self, inner: Model, settings: BatchSettings) -> None:
        self.inner, self.settings = inner, settings
        self.platform = inner.platform  # type: ignore[misc]
        self.batcher: Batcher[InferenceRequest, InferenceResponse] = Batcher(self._run, settings)
        #: Calls of the inner model (batches and requests run alone): Triton's ``execution_count``.
        self.executions = 0

    def load(self) -> Awaitable[None] | None:
        self.inner.name, self.inner.version = self.name, self.version
        self.batcher.name = self.name
        return self.inner.load()

    async def unload(self) -> None:
        self.batcher.close()
        await resolve(self.inner.unload())

    def ready(self) -> bool:
        return self.inner.ready()

    def metadata(self) -> ModelMetadata:
        return self.inner.metadata()

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        rows = _rows(request)
        if rows is None or rows > self.settings.max_batch_size:
            self.executions += 1
            return await self.inner.infer(request)
        return await self.batcher.submit(request, rows, _batch_key(request))

    async def _run(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        self.executions += 1
        if len(requests) == 1:
            return [await self.inner.infer(requests[0])]
        first = requests[0]
        inputs = {name: np.concatenate([r.inputs[name] for r in requests], axis=0) for name in first.inputs}
        merged = InferenceRequest(inputs, dict(first.parameters), input_parameters=first.input_parameters)
        response = await self.inner.infer(merged)
        return _split(response, [len(next(iter(r.inputs.values()))) for r in requests])


def _rows(request: InferenceRequest) -> int | None:
    """The rows every input shares on axis 0, or None when the request cannot be batched."""
    counts = {array.shape[0] if array.ndim else None for array in request.inputs.values()}
    if len(counts) != 1:
        return None
    rows = counts.pop()
    return rows if rows else None


def _batch_key(request: InferenceRequest) -> Hashable:
    """Requests with equal keys can be concatenated: same inputs, dtypes, trailing shapes, parameters."""
    inputs = tuple(sorted((name, array.dtype.str, array.shape[1:]) for name, array in request.inputs.items()))
    return inputs, _frozen(request.parameters), _frozen(request.input_parameters)


def _frozen(value: Any) -> Hashable:
    if not value:  # the usual case, first: no parameters
        return None
    if isinstance(value, dict):
        return tuple(sorted((key, _frozen(item)) for key, item in value.items()))
    return value if isinstance(value, Hashable) else repr(value)


def _split(response: InferenceResponse, rows: list[int]) -> list[InferenceResponse]:
    pieces = {}
    for name, array in response.outputs.items():
        try:
            pieces[name] = split_rows(np.asarray(array), rows)
        except BatchSizeMismatch as exc:
            raise BatchSizeMismatch(f"output '{name}': {exc}") from None
    return [
        InferenceResponse({name: parts[i] for name, parts in pieces.items()}, parameters=response.parameters)
        for i in range(len(rows))
    ]


def split_rows(array: Any, rows: list[int]) -> list[Any]:
    """``array`` cut on axis 0 into pieces of ``rows`` rows; another total is a BatchSizeMismatch."""
    total = sum(rows)
    if array.ndim == 0 or array.shape[0] != total:
        raise BatchSizeMismatch(
            f"the model answered {array.shape[0] if array.ndim else 'no'} rows for a batch of {total}"
        )
    return np.split(array, np.cumsum(rows)[:-1])


def batched(model: Model, settings: BatchSettings) -> Model:
    """``model`` behind a batcher when ``settings`` enable batching, else ``model`` itself."""
    return BatchingModel(model, settings) if settings.enabled else model
