"""Room for models loaded on demand (``--max-loaded-models``): which models hold one of the N
slots, least recently used first, and the loads waiting for one.

A model takes its slot when its load starts, not when it ends, so several models load at once
without together going over the limit, and gives it back once it is unloaded (its memory freed).
Only an idle model (`Slots.idle`: loaded, no calls inside it or waiting for it) is unloaded to make
room, so a model is never unloaded under the calls it was loaded for, to be loaded again at once;
a load finding every slot busy waits until one is given back or a model goes idle.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Slots(Generic[T]):
    """At most ``limit`` holders (None: no limit), in least recently used order."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        #: Holders, least recently used first: `touch` is a move to the end, not a sort per load.
        self._held: OrderedDict[T, None] = OrderedDict()
        self._waiters: list[asyncio.Future[bool]] = []

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, holder: object) -> bool:
        return holder in self._held

    def full(self) -> bool:
        return self.limit is not None and len(self._held) >= self.limit

    def take(self, holder: T) -> None:
        """``holder`` holds a slot now, as the most recently used."""
        self._held[holder] = None
        self._held.move_to_end(holder)

    def touch(self, holder: T) -> None:
        """``holder`` was just used: the last to be chosen to make room."""
        if holder in self._held:
            self._held.move_to_end(holder)

    def give_back(self, holder: T) -> None:
        if self._held.pop(holder, False) is None:
            self.wake()

    def least_recent(self, may_leave: Callable[[T], bool]) -> T | None:
        """The least recently used holder that ``may_leave``, or None."""
        for holder in self._held:
            if may_leave(holder):
                return holder
        return None

    def wake(self) -> None:
        """Room may have been made (a slot given back, a model gone idle): the waiting loads look
        again, in the order they came."""
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(True)

    async def wait(self, timeout: float) -> bool:
        """Until `wake` (True) or ``timeout`` seconds (False): a future and a timer, not
        ``asyncio.wait_for``'s task."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(timeout, _time_out, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()


def _time_out(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
