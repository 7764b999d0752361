"""AdaptiveOffload: where synchronous code runs, learnt from how long its calls take."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from inferd.core.offload import FIRST_STREAK, WINDOW, AdaptiveOffload

where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")


def thread_name() -> str:
    return f"{threading.current_thread().name}:{where.get()}"


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_quick_code_starts_in_threads_with_the_callers_context_then_moves_to_the_loop() -> None:
    async def scenario() -> list[str]:
        offload = AdaptiveOffload()
        where.set("request-7")
        return [await offload.run(thread_name) for _ in range(FIRST_STREAK + 2)]

    names = run(scenario())
    assert isinstance(names, list)
    assert all(name != "MainThread:request-7" for name in names[:FIRST_STREAK])
    assert all(name.endswith(":request-7") for name in names)
    assert names[-1] == "MainThread:request-7"


def busy(seconds: float) -> None:
    """Use the CPU for ``seconds`` (sleeping would not count as the code's own work in a thread)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_blocking_call_on_the_loop_sends_code_back_and_doubles_the_streak_needed() -> None:
    delay = {"seconds": 0.0}

    def work() -> str:
        time.sleep(delay["seconds"])
        return threading.current_thread().name

    async def scenario() -> tuple[list[str], int]:
        offload = AdaptiveOffload(budget_s=0.005)
        names = [await offload.run(work) for _ in range(FIRST_STREAK + 1)]
        delay["seconds"] = 0.08
        names.append(await offload.run(work))  # blocks the loop for over ten budgets
        delay["seconds"] = 0.0
        names.extend([await offload.run(work) for _ in range(FIRST_STREAK + 1)])
        return names, offload.needed

    names, needed = run(scenario())  # type: ignore[misc]
    assert names[FIRST_STREAK] == "MainThread"
    assert names[FIRST_STREAK + 1] == "MainThread"  # the slow call itself ran on the loop
    after = names[FIRST_STREAK + 2 :]
    assert all(name != "MainThread" for name in after), "back in threads for twice the streak"
    assert needed == 2 * FIRST_STREAK


def test_code_that_gets_slow_on_the_loop_goes_back_after_a_window_but_one_slow_call_moves_nothing() -> None:
    cost = {"seconds": 0.0}

    def work() -> str:
        busy(cost["seconds"])
        return threading.current_thread().name

    async def scenario() -> tuple[list[str], list[str], int]:
        # budgets of 10 ms: a loaded machine's preemption of a call costs less than that
        offload = AdaptiveOffload(budget_s=0.01)
        for _ in range(FIRST_STREAK):
            await offload.run(work)
        cost["seconds"] = 0.03  # one call slowed down (as by the OS): stays on the loop
        first = [await offload.run(work)]
        cost["seconds"] = 0.0
        first += [await offload.run(work) for _ in range(WINDOW)]
        cost["seconds"] = 0.02  # now every call overruns the budget
        later = [await offload.run(work) for _ in range(WINDOW + 2)]
        return first, later, offload.needed

    first, later, needed = run(scenario())  # type: ignore[misc]
    assert set(first) == {"MainThread"}
    assert later[:WINDOW].count("MainThread") >= WINDOW - 1  # judged over a whole window
    assert later[-1] != "MainThread"
    assert needed == 2 * FIRST_STREAK


def test_slow_code_in_threads_never_moves_to_the_loop_and_errors_propagate() -> None:
    def slow() -> str:
        busy(0.003)
        return threading.current_thread().name

    def broken() -> None:
        raise ValueError("user code failed")

    async def scenario() -> list[str]:
        offload = AdaptiveOffload(budget_s=0.001)
        names = [await offload.run(slow) for _ in range(FIRST_STREAK + 5)]
        with pytest.raises(ValueError, match="user code failed"):
            await offload.run(broken)
        return names

    names = run(scenario())
    assert isinstance(names, list)
    assert "MainThread" not in names
