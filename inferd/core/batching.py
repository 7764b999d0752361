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
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inferd.core.errors import Overloaded
from inferd.core.model import Model, resolve
from inferd.core.types import InferenceRequest, InferenceResponse, ModelMetadata

logger = logging.getLogger("inferd.batching")


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
class _Waiting:
    request: InferenceRequest
    rows: int
    key: Hashable
    future: asyncio.Future[InferenceResponse] = field(repr=False)


class BatchingModel(Model):
    """Batches calls to ``inner.infer``; everything else is the inner model's."""

    def __init__(self, inner: Model, settings: BatchSettings) -> None:
        self.inner, self.settings = inner, settings
        self.platform = inner.platform  # type: ignore[misc]
        self._waiting: deque[_Waiting] = deque()
        self._arrived: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None

    # --- the inner model's lifecycle ------------------------------------------------------------

    def load(self) -> Awaitable[None] | None:
        self.inner.name, self.inner.version = self.name, self.version
        return self.inner.load()

    async def unload(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        for waiting in self._waiting:
            if not waiting.future.done():
                waiting.future.set_exception(Overloaded(f"model '{self.name}' is unloading"))
        self._waiting.clear()
        await resolve(self.inner.unload())

    def ready(self) -> bool:
        return self.inner.ready()

    def metadata(self) -> ModelMetadata:
        return self.inner.metadata()

    # --- batching ---------------------------------------------------------------------------------

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        rows = _rows(request)
        if rows is None or rows > self.settings.max_batch_size:
            return await self.inner.infer(request)
        if len(self._waiting) >= self.settings.max_queue_size:
            raise Overloaded(f"model '{self.name}' has {len(self._waiting)} requests waiting; retry later")
        loop = asyncio.get_running_loop()
        waiting = _Waiting(request, rows, _batch_key(request), loop.create_future())
        self._waiting.append(waiting)
        if self._worker is None or self._worker.done():
            self._arrived = asyncio.Event()
            self._worker = loop.create_task(self._batches())
        assert self._arrived is not None
        self._arrived.set()
        return await waiting.future

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
                await self._run(batch)

    def _rows_ready(self) -> int:
        """Rows waiting that could join the first waiting request's batch."""
        key = self._waiting[0].key
        return sum(waiting.rows for waiting in self._waiting if waiting.key == key)

    def _take(self) -> list[_Waiting]:
        """The first request and those after it that fit its batch, in arrival order."""
        first = self._waiting[0]
        batch: list[_Waiting] = []
        rows, kept = 0, deque[_Waiting]()
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

    async def _run(self, batch: list[_Waiting]) -> None:
        if len(batch) == 1:
            await self._settle(batch, self.inner.infer(batch[0].request), single=True)
            return
        first = batch[0].request
        inputs = {
            name: np.concatenate([waiting.request.inputs[name] for waiting in batch], axis=0)
            for name in first.inputs
        }
        merged = InferenceRequest(inputs, dict(first.parameters), input_parameters=first.input_parameters)
        await self._settle(batch, self.inner.infer(merged), single=False)

    async def _settle(
        self, batch: list[_Waiting], running: Awaitable[InferenceResponse], single: bool
    ) -> None:
        """Hand each request its answer (or the batch's error)."""
        try:
            response = await running
            answers = [response] if single else _split(response, [waiting.rows for waiting in batch])
        except Exception as exc:
            for waiting in batch:
                if not waiting.future.done():
                    waiting.future.set_exception(exc)
            return
        for waiting, answer in zip(batch, answers, strict=True):
            if not waiting.future.done():
                waiting.future.set_result(answer)


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
    if isinstance(value, dict):
        return tuple(sorted((key, _frozen(item)) for key, item in value.items()))
    return value if isinstance(value, Hashable) else repr(value)


def _split(response: InferenceResponse, rows: list[int]) -> list[InferenceResponse]:
    total = sum(rows)
    for name, array in response.outputs.items():
        got = np.asarray(array)
        if got.ndim == 0 or got.shape[0] != total:
            raise BatchSizeMismatch(
                f"output '{name}' has {got.shape[0] if got.ndim else 'no'} rows for a batch of {total}"
            )
    bounds = np.cumsum(rows)[:-1]
    pieces = {name: np.split(np.asarray(array), bounds) for name, array in response.outputs.items()}
    return [
        InferenceResponse(
            {name: parts[index] for name, parts in pieces.items()}, parameters=response.parameters
        )
        for index in range(len(rows))
    ]


def batched(model: Model, settings: BatchSettings) -> Model:
    """``model`` behind a batcher when ``settings`` enable batching, else ``model`` itself."""
    return BatchingModel(model, settings) if settings.enabled else model
