"""`inferd.engines.inline`: a coroutine that never waits runs to its end at once, with no task; one
that waits goes on in a task, in its own context, and can be cancelled there."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from inferd.engines import inline

current: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")


async def answer(seen: list[str], wait: asyncio.Future[str] | None) -> None:
    token = current.set("mine")
    try:
        if wait is not None:
            seen.append(await wait)
        seen.append(current.get())
    finally:
        current.reset(token)  # a token of another context would raise ValueError here


def test_a_coroutine_that_never_waits_finishes_inline_without_leaking_its_context() -> None:
    async def main() -> None:
        seen: list[str] = []
        assert inline.start(asyncio.get_running_loop(), answer(seen, None)) is None
        assert seen == ["mine"]
        assert current.get() == "none"

    asyncio.run(main())


def test_a_coroutine_that_waits_goes_on_in_a_task_in_its_own_context() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        seen: list[str] = []
        wait: asyncio.Future[str] = loop.create_future()
        task = inline.start(loop, answer(seen, wait))
        assert task is not None and not task.done() and seen == []
        assert current.get() == "none"
        wait.set_result("woken")
        await task
        assert seen == ["woken", "mine"]

    asyncio.run(main())


def test_a_waiting_coroutine_is_cancelled_through_its_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        seen: list[str] = []
        task = inline.start(loop, answer(seen, loop.create_future()))
        assert task is not None
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen == []

    asyncio.run(main())
