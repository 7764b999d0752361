"""Where synchronous user code runs: on the event loop while it is quick, in a thread once it is not.

A thread hop costs tens of microseconds and a GIL hand-over each way, often more than a small handler
itself; running slow code on the loop, though, stops every other request. `AdaptiveOffload` learns
which case it is in from the calls' own durations: it starts in threads (code of unknown speed never
blocks the loop), moves to the loop after a run of quick calls, and back to threads as soon as one
call on the loop overruns its budget. Each move back doubles the run of quick calls needed before the
next try, so code that is only sometimes slow blocks the loop a logarithmic number of times.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

T = TypeVar("T")

#: A call on the loop longer than this sends the code back to threads.
INLINE_BUDGET_S = 0.001
#: Quick calls in a row, in threads, before the first move to the loop; doubled after each overrun.
FIRST_STREAK = 32
MAX_STREAK = 1 << 20


class AdaptiveOffload:
    """Runs ``function(*args)`` on the loop or in ``executor`` (the loop's default when None), with the
    caller's context variables (the request id of log lines) either way."""

    def __init__(self, executor: Executor | None = None, budget_s: float = INLINE_BUDGET_S) -> None:
        self.executor = executor
        self.budget_s = budget_s
        self.inline = False
        self.streak = 0
        self.needed = FIRST_STREAK

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        if self.inline:
            started = time.perf_counter()
            try:
                return function(*args)
            finally:
                if time.perf_counter() - started > self.budget_s:
                    self.inline, self.streak = False, 0
                    self.needed = min(self.needed * 2, MAX_STREAK)
        timed = _Timed(function)
        try:
            return await in_thread(self.executor, timed, *args)
        finally:
            self._after_thread_call(timed.seconds)

    def _after_thread_call(self, seconds: float) -> None:
        if seconds > self.budget_s:
            self.streak = 0
            return
        self.streak += 1
        if self.streak >= self.needed:
            self.inline = True


async def in_thread(executor: Executor | None, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in ``executor``, as `asyncio.to_thread` does it in the default one."""
    call = functools.partial(contextvars.copy_context().run, function, *args)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


class _Timed:
    """The function, timing its own run in the thread (queueing for a thread is not the code's cost)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.seconds = float("inf")

    def __call__(self, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.function(*args)
        finally:
            self.seconds = time.perf_counter() - started
