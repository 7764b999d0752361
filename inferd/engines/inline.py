"""Run a coroutine inline, in the callback that has its input, and give it a task only if it waits.

An answer that never waits (a synchronous model on the event loop, which is most small models) has
no use for a task: creating one, scheduling its first step for the loop's next turn and dropping it
when done is Python on every request that does nothing for it. `start` runs the coroutine's first
step at once, in a copy of the current context (so the context variables it sets do not leak into
the caller's); when it finishes there, nothing more is made. When it waits (an async model, a
concurrency gate, a paused transport), a task takes over where it stopped, each step in that same
context, as if it had been a task from the start: it waits on what the coroutine waited on, passes
on a cancellation, and the caller keeps it as it kept the task before.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any


def start(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run ``coro`` until it finishes (None) or waits (the task that goes on with it)."""
    context = contextvars.copy_context()
    try:
        waiting_on = context.run(coro.send, None)
    except StopIteration:
        return None
    return loop.create_task(_finish(_Resumed(context, coro, waiting_on)))


async def _finish(rest: _Resumed) -> None:
    await rest


class _Resumed:
    """The rest of a coroutine that already yielded ``waiting_on`` to its inline runner. Each step
    runs in the coroutine's own ``context`` (a task would run it in a copy, where the context
    variables' reset tokens of the first step are not valid; and Python 3.10's tasks take no
    context)."""

    def __init__(
        self, context: contextvars.Context, coro: Coroutine[Any, Any, None], waiting_on: Any
    ) -> None:
        self.context, self.coro, self.waiting_on = context, coro, waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        context, coro, waiting_on = self.context, self.coro, self.waiting_on
        while True:
            try:
                sent = yield waiting_on  # the task waits on it (a future, or None: the next turn)
            except BaseException as exc:  # a cancellation, or the failure of what it waited on
                try:
                    waiting_on = context.run(coro.throw, exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = context.run(coro.send, sent)
                except StopIteration:
                    return
