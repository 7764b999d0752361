"""`inferd.core.eager.start`: a coroutine runs in its caller's turn of the loop, and only what is left
once it waits runs as a task, with that task's result, failure and cancellation its own."""

from __future__ import annotations

import asyncio

import pytest

from inferd.core import eager


async def test_a_coroutine_that_never_waits_ends_before_start_returns() -> None:
    steps: list[str] = []

    async def quick() -> None:
        steps.append("ran")

    assert eager.start(quick()) is None
    assert steps == ["ran"]


async def test_what_a_coroutine_raises_before_it_waits_is_raised_by_start() -> None:
    async def broken() -> None:
        raise OSError("weights.npy is missing")

    with pytest.raises(OSError, match="missing"):
        eager.start(broken())


async def test_a_coroutine_that_waits_goes_on_as_a_task_with_its_result() -> None:
    steps: list[str] = []
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def waits() -> int:
        steps.append("before")
        value = await gate
        steps.append("after")
        await asyncio.sleep(0)
        return value + 1

    task = eager.start(waits())
    assert task is not None
    assert steps == ["before"]  # ran up to its first wait in the caller's turn
    gate.set_result(41)
    assert await task == 42
    assert steps == ["before", "after"]


async def test_a_failure_after_the_first_wait_is_the_tasks() -> None:
    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise ValueError("corrupt")

    task = eager.start(fails_later())
    assert task is not None
    with pytest.raises(ValueError, match="corrupt"):
        await task


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    cleaned: list[str] = []

    async def long() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append("finally")

    task = eager.start(long())
    assert task is not None
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"]


async def test_a_coroutine_may_catch_its_cancellation_and_finish() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            return "tidied up"
        return "slept"

    task = eager.start(stubborn())
    assert task is not None
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "tidied up"
