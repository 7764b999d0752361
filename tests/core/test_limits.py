"""The per-model gate, sans-IO: turns, the bounded queue, the timeout, and a model's own TimeoutError."""

from __future__ import annotations

import asyncio

import pytest

from inferd.core.errors import Overloaded, RequestTimeout
from inferd.core.limits import Gate, Limits


async def test_one_runs_one_waits_the_rest_are_shed() -> None:
    gate = Gate("m", Limits(max_concurrency=1, max_queue_size=1))
    release = asyncio.Event()

    async def work() -> str:
        await release.wait()
        return "done"

    first = asyncio.create_task(gate.run(work))
    second = asyncio.create_task(gate.run(work))
    await asyncio.sleep(0)
    with pytest.raises(Overloaded, match="busy"):
        await gate.run(work)
    release.set()
    assert await first == await second == "done"
    assert await gate.run(work) == "done"  # turns and queue places are given back


async def test_the_timeout_counts_the_wait_and_frees_the_turn() -> None:
    gate = Gate("m", Limits(max_concurrency=1, request_timeout=0.05))

    async def slow() -> None:
        await asyncio.sleep(10)

    with pytest.raises(RequestTimeout, match=r"0\.05 s"):
        await gate.run(slow)

    async def quick() -> int:
        return 1

    assert await gate.run(quick) == 1


async def test_a_models_own_timeout_error_is_not_ours() -> None:
    gate = Gate("m", Limits(request_timeout=5))

    async def raises() -> None:
        raise asyncio.TimeoutError

    with pytest.raises(asyncio.TimeoutError) as raised:
        await gate.run(raises)
    assert not isinstance(raised.value, RequestTimeout)
