"""Which upstreams each endpoint routes to: one immutable `Split` per endpoint, swapped whole.

`EndpointTable.set` replaces an endpoint's split in one assignment, so a request sees the old split or
the new one and never half of each; the next request picks from the new one. A route is one service:
its weight picks it, then the request goes to whichever of its upstreams (its replicas) has the
fewest requests in flight. Picking an upstream and
counting it in flight happen under one lock, taken by `set` too: once `set` returns, every request that
picked from the old split is already counted, and `drained` cannot miss it (the control plane may call
it from another thread than the gateway's).
"""

from __future__ import annotations

import asyncio
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from random import random
from typing import NamedTuple

#: A route's upstream (``"127.0.0.1:8001"``), or the upstreams of one service (its replicas).
Upstreams = str | Sequence[str]

#: How often `EndpointTable.drained` looks at the in-flight count.
DRAIN_POLL_SECONDS = 0.01


class Target(NamedTuple):
    """One route of an endpoint: an upstream (``"127.0.0.1:8001"``) or a service's replicas, and its
    weight."""

    upstream: Upstreams
    weight: int


class Shadow(NamedTuple):
    """Where a share (``percent`` of 100) of an endpoint's requests is copied; answers are dropped."""

    upstream: str
    percent: float


@dataclass(frozen=True)
class Split:
    """An endpoint's routes as requests pick from them: the routes of positive weight (each its
    service's upstreams) and the cumulative weights, ``random() * total`` finding one by bisection."""

    name: str
    groups: tuple[tuple[str, ...], ...]
    cumulative: tuple[int, ...]
    shadow: str | None
    shadow_share: float  # 0..1
    #: Each upstream's gRPC address (``host:port``), for those serving gRPC: a gRPC call picks an
    #: upstream as a request does (and is counted in flight under its name), then goes there.
    grpc: Mapping[str, str] = field(default_factory=dict)
    #: The ``Authorization`` value each upstream takes (``Bearer <its service's token>``), sent in
    #: place of the client's; an upstream without one gets the gateway's ``upstream_token``.
    tokens: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.cumulative[-1] if self.cumulative else 0

    @property
    def upstreams(self) -> tuple[str, ...]:
        return tuple(upstream for group in self.groups for upstream in group)

    def pick(self, inflight: Mapping[str, int] | None = None) -> str | None:
        """An upstream: its route chosen by weight, then the route's upstream with the fewest
        requests in ``inflight`` (the first of them from a random start); None when no route has
        weight."""
        groups = self.groups
        if len(groups) == 1:
            group = groups[0]
        elif not groups:
            return None
        else:
            group = groups[bisect_right(self.cumulative, random() * self.cumulative[-1])]
        if len(group) == 1 or inflight is None:
            return group[0]
        start = int(random() * len(group))
        ordered = group[start:] + group[:start]
        return min(ordered, key=lambda upstream: inflight.get(upstream, 0))

    def pick_shadow(self) -> str | None:
        """The shadow upstream for a share of the calls (``shadow_share``), else None."""
        if self.shadow is None or random() >= self.shadow_share:
            return None
        return self.shadow


def split_of(
    name: str,
    routes: Iterable[tuple[Upstreams, int]],
    shadow: tuple[str, float] | None,
    grpc: Mapping[str, str] | None = None,
    tokens: Mapping[str, str] | None = None,
) -> Split:
    """Check and freeze an endpoint's routes (ValueError says what is wrong); ``tokens``: the bearer
    token each upstream takes."""
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    cumulative, total = [], 0
    for upstreams, weight in routes:
        group = (upstreams,) if isinstance(upstreams, str) else tuple(upstreams)
        if not group:
            raise ValueError(f"endpoint '{name}': a route needs at least one upstream")
        for upstream in group:
            check_address(upstream)
            if upstream in seen:
                raise ValueError(f"endpoint '{name}': {upstream} is routed to twice")
            seen.add(upstream)
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ValueError(
                f"endpoint '{name}': weight of {', '.join(group)} must be an integer >= 0, not {weight!r}"
            )
        if weight:
            total += weight
            groups.append(group)
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
    authorizations = {upstream: f"Bearer {token}".encode() for upstream, token in (tokens or {}).items()}
    return Split(
        name, tuple(groups), tuple(cumulative), shadow_upstream, share, dict(grpc or {}), authorizations
    )


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
        routes: Iterable[tuple[Upstreams, int]],
        shadow: tuple[str, float] | None = None,
        grpc: Mapping[str, str] | None = None,
        tokens: Mapping[str, str] | None = None,
    ) -> None:
        """Route ``name`` to ``routes`` ((upstream or a service's upstreams, weight) pairs; weights need not
        sum to 100, a weight of 0 takes no new requests) and copy a share of requests to
        ``shadow`` ((upstream, percent)), from the next request on. ``grpc``: upstream → its gRPC
        address; ``tokens``: upstream → the bearer token it takes."""
        split = split_of(name, routes, shadow, grpc, tokens)
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
            inflight = self._inflight
            upstream, shadow = split.pick(inflight), split.pick_shadow() if mirror else None
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

    def inflight_all(self) -> dict[str, int]:
        """`inflight` of every upstream holding requests now (what the autoscaler samples)."""
        with self._lock:
            return dict(self._inflight)

    async def drained(self, upstream: str, timeout: float) -> bool:
        """Wait until ``upstream`` has nothing in flight (call it once its weight is 0 or its routes
        are gone, so nothing new arrives); False when ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        while self.inflight(upstream):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(DRAIN_POLL_SECONDS)
        return True
