"""Run a coroutine at once, in its caller's turn of the event loop, and make a task of it only if it
has to wait (what Python 3.12's eager tasks do, for every version inferd runs on).

A multiplexed model's load is such a coroutine: when a slot is free, or an idle model's can be
taken, and the model loads quickly on the loop, it finishes without waiting once, and a task, its
scheduling and the extra turns of the loop before its caller hears of it would be most of what the
call costs beyond the load itself. When it does wait (a load in a thread, room not yet made), the
rest runs as an ordinary task, which the calls waiting for that load share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def start(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T] | None:
    """Run ``coro`` until it finishes (None; what it raises is raised here) or first waits: then the
    task that carries it on from there."""
    try:
        waited = coro.send(None)
    except StopIteration:
        return None
    return asyncio.get_running_loop().create_task(_carry_on(_Resumed(coro, waited)))


async def _carry_on(resumed: _Resumed[T]) -> T:
    return await resumed


class _Resumed(Generic[T]):
    """``coro``, already started and waiting for ``waited`` (the future it yielded), as an awaitable:
    the task awaiting this hands ``waited`` on to the event loop, then ``coro`` what it is sent or
    thrown (its cancellation included), as ``await coro`` would have from the start."""

    def __init__(self, coro: Coroutine[Any, Any, T], waited: Any) -> None:
        self.coro, self.waited = coro, waited

    def __await__(self) -> Generator[Any, Any, T]:
        coro, waited = self.coro, self.waited
        while True:
            try:
                sent = yield waited
            except BaseException as exc:  # passed on to the coroutine, as await does
                try:
                    waited = coro.throw(exc)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
            else:
                try:
                    waited = coro.send(sent)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
