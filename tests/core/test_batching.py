"""Adaptive batching with real models in one event loop: concatenation, splitting, deadlines,
failures confined to their batch, mismatched answers and overload."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from inferd.core.batching import BatchingModel, BatchSettings, BatchSizeMismatch, batched
from inferd.core.errors import Overloaded
from inferd.core.model import Model
from inferd.core.types import InferenceRequest, Tensors


class Recorder(Model):
    """Doubles ``x`` and records the rows of every call it gets."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[int] = []
        self.delay = delay

    async def predict(self, inputs: Tensors) -> Tensors:  # type: ignore[override]
        self.calls.append(len(inputs["x"]))
        if self.delay:
            await asyncio.sleep(self.delay)
        if (inputs["x"] < 0).any():
            raise ValueError("negative input")
        return {"y": inputs["x"] * 2, "rows": np.full(len(inputs["x"]), len(inputs["x"]))}


class Truncating(Model):
    def predict(self, inputs: Tensors) -> Tensors:
        return {"y": inputs["x"][:1]}


def request(*rows: float, width: int = 2) -> InferenceRequest:
    return InferenceRequest({"x": np.array([[value] * width for value in rows], dtype=np.float32)})


async def loaded(model: Model, **settings: float) -> BatchingModel:
    batching = BatchingModel(model, BatchSettings(**settings))  # type: ignore[arg-type]
    batching.name = "m"
    await asyncio.sleep(0)
    return batching


async def test_concurrent_requests_run_as_one_call_and_are_split_back() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=8, max_batch_time_ms=50)
    answers = await asyncio.gather(
        model.infer(request(1)), model.infer(request(2, 3)), model.infer(request(4))
    )
    assert inner.calls == [4]
    assert [answer.outputs["y"][:, 0].tolist() for answer in answers] == [[2], [4, 6], [8]]
    assert [answer.outputs["rows"].tolist() for answer in answers] == [[4], [4, 4], [4]]


async def test_a_full_batch_does_not_wait_for_the_deadline() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=2, max_batch_time_ms=5_000)
    started = time.monotonic()
    await asyncio.gather(model.infer(request(1)), model.infer(request(2)))
    assert time.monotonic() - started < 1
    assert inner.calls == [2]


async def test_a_lone_request_waits_at_most_the_deadline() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=64, max_batch_time_ms=30)
    started = time.monotonic()
    answer = await model.infer(request(5))
    elapsed = time.monotonic() - started
    assert answer.outputs["y"].tolist() == [[10, 10]]
    assert 0.025 <= elapsed < 1


async def test_batches_never_exceed_the_size_and_big_requests_run_alone() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=3, max_batch_time_ms=20)
    answers = await asyncio.gather(
        *(model.infer(request(i)) for i in range(7)), model.infer(request(*range(5)))
    )
    assert inner.calls.count(5) == 1  # the 5-row request ran alone
    assert all(rows <= 3 for rows in inner.calls if rows != 5)
    assert sum(inner.calls) == 12
    assert [answer.outputs["y"][0, 0] for answer in answers[:7]] == [2 * i for i in range(7)]


async def test_requests_of_other_shapes_are_not_mixed() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=8, max_batch_time_ms=20)
    narrow, wide = await asyncio.gather(model.infer(request(1, width=2)), model.infer(request(1, width=3)))
    assert sorted(inner.calls) == [1, 1]
    assert narrow.outputs["y"].shape == (1, 2) and wide.outputs["y"].shape == (1, 3)


async def test_a_failing_batch_fails_only_its_own_requests() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=2, max_batch_time_ms=20)
    results = await asyncio.gather(
        model.infer(request(1)),
        model.infer(request(-1)),
        model.infer(request(3)),
        model.infer(request(4)),
        return_exceptions=True,
    )
    assert isinstance(results[0], ValueError) and isinstance(results[1], ValueError)
    assert [result.outputs["y"][0, 0] for result in results[2:]] == [6, 8]  # type: ignore[union-attr]


async def test_an_answer_with_other_rows_fails_the_batch() -> None:
    model = await loaded(Truncating(), max_batch_size=4, max_batch_time_ms=20)
    results = await asyncio.gather(model.infer(request(1)), model.infer(request(2)), return_exceptions=True)
    assert all(isinstance(result, BatchSizeMismatch) for result in results)
    assert "output 'y': the model answered 1 rows for a batch of 2" in str(results[0])


async def test_overload_is_shed() -> None:
    inner = Recorder(delay=0.2)
    model = await loaded(inner, max_batch_size=2, max_batch_time_ms=1, max_queue_size=2)
    results = await asyncio.gather(*(model.infer(request(i)) for i in range(6)), return_exceptions=True)
    shed = [result for result in results if isinstance(result, Overloaded)]
    assert shed and all(result.retry_after >= 1 for result in shed)
    assert any(not isinstance(result, Exception) for result in results)


async def test_unload_fails_waiting_requests_and_stops_the_worker() -> None:
    inner = Recorder()
    model = await loaded(inner, max_batch_size=8, max_batch_time_ms=10_000)
    waiting = asyncio.ensure_future(model.infer(request(1)))
    await asyncio.sleep(0.05)
    await model.unload()
    with pytest.raises(Overloaded):
        await waiting


def test_batching_off_returns_the_model_itself() -> None:
    inner = Recorder()
    assert batched(inner, BatchSettings(max_batch_size=1)) is inner
    assert isinstance(batched(inner, BatchSettings(max_batch_size=4)), BatchingModel)
