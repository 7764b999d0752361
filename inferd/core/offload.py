"""Where synchronous user code runs: on the event loop while it is quick, in a thread once it is not.

A thread hop costs tens of microseconds and a GIL hand-over each way, often more than a small handler
itself; running slow code on the loop, though, stops every other request. `AdaptiveOffload` learns
which case it is in from the calls' own durations. It starts in threads (code of unknown speed never
blocks the loop) and moves to the loop after a run of quick calls. It goes back to threads when one
call blocks the loop for ten budgets, or when most calls of a window of 16 overran the budget (one
call slowed by the OS or a garbage collection moves nothing). Each move back doubles the run of quick
calls needed before the next try, so code that is only sometimes slow blocks the loop a logarithmic
number of times.
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

#: What a quick call takes at most.
INLINE_BUDGET_S = 0.001
#: One call on the loop longer than this many budgets sends the code back at once.
BLOCKING_BUDGETS = 10
#: Calls on the loop judged together: more than half of them over the budget sends the code back.
WINDOW = 16
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
        self.window_calls = self.window_slow = 0

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        if self.inline:
            started = time.perf_counter()
            try:
                return function(*args)
            finally:
                self._after_inline_call(time.perf_counter() - started)
        timed = _Timed(function)
        try:
            return await in_thread(self.executor, timed, *args)
        finally:
            self._after_thread_call(timed.seconds, timed.cpu_seconds)

    def _after_inline_call(self, seconds: float) -> None:
        if seconds <= BLOCKING_BUDGETS * self.budget_s:
            self.window_calls += 1
            self.window_slow += seconds > self.budget_s
            if self.window_calls < WINDOW:
                return
            slow, self.window_calls, self.window_slow = self.window_slow, 0, 0
            if 2 * slow <= WINDOW:
                return
        self.inline, self.streak = False, 0
        self.needed = min(self.needed * 2, MAX_STREAK)

    def _after_thread_call(self, seconds: float, cpu_seconds: float) -> None:
        """A call in a thread is quick by the CPU it used: its wall time also counts the waits for the
        GIL the event loop holds (up to the 5 ms switch interval), though not a blocking call's."""
        if cpu_seconds > self.budget_s or seconds > BLOCKING_BUDGETS * self.budget_s:
            self.streak = 0
            return
        self.streak += 1
        if self.streak >= self.needed:
            self.inline, self.window_calls, self.window_slow = True, 0, 0


async def in_thread(executor: Executor | None, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in ``executor``, as `asyncio.to_thread` does it in the default one."""
    call = functools.partial(contextvars.copy_context().run, function, *args)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


class _Timed:
    """The function, timing its own run in the thread (queueing for a thread is not the code's cost)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.seconds = self.cpu_seconds = float("inf")

    def __call__(self, *args: Any) -> Any:
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            return self.function(*args)
        finally:
            self.seconds = time.perf_counter() - started
            self.cpu_seconds = time.thread_time() - cpu_started
