"""Which upstreams each endpoint routes to: one immutable `Split` per endpoint, swapped whole.

`EndpointTable.set` replaces an endpoint's split in one assignment, so a request sees the old split or
the new one and never half of each; the next request picks from the new one. Picking an upstream and
counting it in flight happen under one lock, taken by `set` too: once `set` returns, every request that
picked from the old split is already counted, and `drained` cannot miss it (the control plane may call
it from another thread than the gateway's).
"""

from __future__ import annotations

import asyncio
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from random import random
from typing import NamedTuple

#: How often `EndpointTable.drained` looks at the in-flight count.
DRAIN_POLL_SECONDS = 0.01


class Target(NamedTuple):
    """One route of an endpoint: an upstream (``"127.0.0.1:8001"``) and its weight."""

    upstream: str
    weight: int


class Shadow(NamedTuple):
    """Where a share (``percent`` of 100) of an endpoint's requests is copied; answers are dropped."""

    upstream: str
    percent: float


@dataclass(frozen=True)
class Split:
    """An endpoint's routes as requests pick from them: upstreams of positive weight and the
    cumulative weights, ``random() * total`` finding one by bisection."""

    name: str
    upstreams: tuple[str, ...]
    cumulative: tuple[int, ...]
    shadow: str | None
    shadow_share: float  # 0..1
    #: Each upstream's gRPC address (``host:port``), for those serving gRPC: a gRPC call picks an
    #: upstream as a request does (and is counted in flight under its name), then goes there.
    grpc: Mapping[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.cumulative[-1] if self.cumulative else 0

    def pick(self) -> str | None:
        """An upstream chosen by weight; None when no route has weight."""
        if len(self.upstreams) == 1:
            return self.upstreams[0]
        if not self.upstreams:
            return None
        return self.upstreams[bisect_right(self.cumulative, random() * self.cumulative[-1])]

    def pick_shadow(self) -> str | None:
        """The shadow upstream for a share of the calls (``shadow_share``), else None."""
        if self.shadow is None or random() >= self.shadow_share:
            return None
        return self.shadow


def split_of(
    name: str,
    routes: Iterable[tuple[str, int]],
    shadow: tuple[str, float] | None,
    grpc: Mapping[str, str] | None = None,
) -> Split:
    """Check and freeze an endpoint's routes (ValueError says what is wrong)."""
    upstreams, cumulative, total = [], [], 0
    for upstream, weight in routes:
        check_address(upstream)
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ValueError(
                f"endpoint '{name}': weight of {upstream} must be an integer >= 0, not {weight!r}"
            )
        if upstream in upstreams:
            raise ValueError(f"endpoint '{name}': {upstream} is routed to twice")
        if weight:
            total += weight
            upstreams.append(upstream)
            cumulative.append(total)
    shadow_upstream, share = None, 0.0
    if shadow is not None:
        shadow_upstream, percent = shadow
        check_address(shadow_upstream)
        if not 0 <= percent <= 100:
            raise ValueError(f"endpoint '{name}': shadow percent must be within 0..100, not {percent}")
        share = percent / 100
    for address in (grpc or {}).values():
        check_address(address)
    return Split(name, tuple(upstreams), tuple(cumulative), shadow_upstream, share, dict(grpc or {}))


def check_address(upstream: str) -> None:
    host, _, port = upstream.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"upstream must be 'host:port', not {upstream!r}")


class EndpointTable:
    """Endpoint name → `Split`, and how many requests each upstream has in flight."""

    def __init__(self) -> None:
        self._splits: dict[str, Split] = {}
        self._inflight: dict[str, int] = {}
        self._lock = threading.Lock()

    def set(
        self,
        name: str,
        routes: Iterable[tuple[str, int]],
        shadow: tuple[str, float] | None = None,
        grpc: Mapping[str, str] | None = None,
    ) -> None:
        """Route ``name`` to ``routes`` ((upstream, weight) pairs; weights need not sum to 100, a
        weight of 0 takes no new requests) and copy a share of requests to ``shadow`` ((upstream,
        percent)), from the next request on. ``grpc``: upstream → its gRPC address."""
        split = split_of(name, routes, shadow, grpc)
        with self._lock:
            self._splits[name] = split

    def remove(self, name: str) -> None:
        """Forget ``name`` (its requests get 404 from then on); unknown names are ignored."""
        with self._lock:
            self._splits.pop(name, None)

    def get(self, name: str) -> Split | None:
        return self._splits.get(name)

    def names(self) -> list[str]:
        return sorted(self._splits)

    def begin(self, name: str, mirror: bool = True) -> tuple[Split, str | None, str | None] | None:
        """For one request of ``name``: its split, the upstream picked by weight and the shadow
        picked by share (None: no upstream has weight, no copy; always None without ``mirror``),
        both counted in flight until `end`; None when there is no such endpoint."""
        with self._lock:
            split = self._splits.get(name)
            if split is None:
                return None
            upstream, shadow = split.pick(), split.pick_shadow() if mirror else None
            inflight = self._inflight
            if upstream is not None:
                inflight[upstream] = inflight.get(upstream, 0) + 1
            if shadow is not None:
                inflight[shadow] = inflight.get(shadow, 0) + 1
            return split, upstream, shadow

    def end(self, upstream: str) -> None:
        """One request to ``upstream`` is over (answered, failed or dropped)."""
        with self._lock:
            left = self._inflight[upstream] - 1
            if left:
                self._inflight[upstream] = left
            else:
                del self._inflight[upstream]

    def inflight(self, upstream: str) -> int:
        """Requests (shadow copies included) sent to ``upstream`` and not over yet."""
        return self._inflight.get(upstream, 0)

    async def drained(self, upstream: str, timeout: float) -> bool:
        """Wait until ``upstream`` has nothing in flight (call it once its weight is 0 or its routes
        are gone, so nothing new arrives); False when ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        while self.inflight(upstream):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(DRAIN_POLL_SECONDS)
        return True
