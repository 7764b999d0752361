"""Per-model admission: at most ``max_concurrency`` requests run at once, at most ``max_queue_size``
wait for a turn (more are shed with `Overloaded`: 503 + Retry-After), and each request gets
``request_timeout`` seconds, waiting included, before it fails with `RequestTimeout` (504).

A timed-out request is cancelled: async model code stops at its next ``await``; synchronous code in a
thread runs to its end (Python cannot stop a thread) and its answer is dropped, its turn freed at
the timeout. Synchronous code on the event loop cannot be interrupted at all, which is why a timeout
turns ``predict_in_thread`` on (`inferd.core.settings`). Every dialect's model calls go through the
data plane's `DataPlane.run`, so one `Gate` per model covers V2, gRPC and every dialect route.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from inferd.core.errors import Overloaded, RequestTimeout

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    max_concurrency: int | None = None
    max_queue_size: int = 1024
    request_timeout: float | None = None

    @property
    def enabled(self) -> bool:
        return self.max_concurrency is not None or self.request_timeout is not None


class Gate:
    """The admission of one model's requests; see the module docstring."""

    def __init__(self, name: str, limits: Limits) -> None:
        self.name, self.limits = name, limits
        self._turns = asyncio.Semaphore(limits.max_concurrency) if limits.max_concurrency else None
        self._waiting = 0

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        timeout = self.limits.request_timeout
        if timeout is None:
            return await self._in_turn(work)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            return await asyncio.wait_for(self._in_turn(work), timeout)
        except asyncio.TimeoutError:
            if loop.time() < deadline:  # the model's own TimeoutError, not ours
                raise
            raise RequestTimeout(
                f"model '{self.name}' did not answer within the request timeout of {timeout:g} s"
            ) from None

    async def _in_turn(self, work: Callable[[], Awaitable[T]]) -> T:
        turns = self._turns
        if turns is None:
            return await work()
        if turns.locked():
            if self._waiting >= self.limits.max_queue_size:
                raise Overloaded(
                    f"model '{self.name}' is busy: {self.limits.max_concurrency} requests running and "
                    f"{self._waiting} waiting; retry later"
                )
            self._waiting += 1
            try:
                await turns.acquire()
            finally:
                self._waiting -= 1
        else:
            await turns.acquire()
        try:
            return await work()
        finally:
            turns.release()


class Gates(dict[str, "Gate | None"]):
    """Each model's gate by name, made when the model is first called, so a model a repository adds
    while the server runs is admitted by its own limits too; None for a model without limits."""

    def __init__(self, limits_of: Callable[[str], Limits]) -> None:
        super().__init__()
        self._limits_of = limits_of

    def __missing__(self, name: str) -> Gate | None:
        limits = self._limits_of(name)
        gate = self[name] = Gate(name, limits) if limits.enabled else None
        return gate
