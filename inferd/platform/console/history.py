"""The last hour of each service's and endpoint's traffic, for the console's charts: one point every
``console_sample_interval`` seconds (10 by default: 360 points an hour), kept in this process's memory
only, a bounded deque per service and per endpoint (a control process restarted starts them anew).

A point is (time, requests per second, p50 and p99 latency in milliseconds) over the interval before
it. A service's come from its replicas' own ``/metrics`` (the requests counter and the latency
histogram, every worker and protocol); an endpoint's requests from the gateway's counter
(`inferd.platform.gateway.metrics`), its latency from the histograms of the services it routes to (the
gateway keeps no latency of its own). Quantiles are read from the histogram's buckets as Prometheus's
``histogram_quantile`` does: linearly within the bucket the rank falls in."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from inferd.platform.manager import Platform
from inferd.platform.records import ServiceState
from inferd.protocols import prometheus

logger = logging.getLogger("inferd.platform.console")

HOUR = 3600.0
#: (unix time, requests per second, p50 ms, p99 ms); the quantiles are None for an interval without requests.
Point = tuple[float, float, float | None, float | None]


@dataclass
class Counts:
    """Cumulative counts: requests, and the latency histogram's cumulative bucket counts by bound."""

    requests: float = 0.0
    buckets: dict[float, float] = field(default_factory=dict)

    def add(self, other: Counts) -> None:
        self.requests += other.requests
        for bound, count in other.buckets.items():
            self.buckets[bound] = self.buckets.get(bound, 0.0) + count

    def since(self, before: Counts | None) -> Counts:
        """What was counted after ``before`` (everything when a replica restarted: its counts fell)."""
        if before is None or self.requests < before.requests:
            return Counts(0.0, {}) if before is None else self
        buckets = {b: max(0.0, c - before.buckets.get(b, 0.0)) for b, c in self.buckets.items()}
        return Counts(self.requests - before.requests, buckets)


def counts_of(exposition: str) -> Counts:
    """Requests answered and the latency histogram of every model in a server's ``/metrics``."""
    found = Counts()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "inferd_requests_total" and sample.labels.get("outcome") in ("ok", "error"):
                found.requests += sample.value
            elif sample.name == "inferd_request_duration_seconds_bucket":
                bound = float(sample.labels["le"])
                found.buckets[bound] = found.buckets.get(bound, 0.0) + sample.value
    return found


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """The ``q`` quantile (seconds) of cumulative ``buckets``, as Prometheus's histogram_quantile."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):  # past the last finite bound: that bound is all that is known
                return lower
            return lower + (bound - lower) * ((rank - below) / (count - below) if count > below else 1.0)
        lower, below = bound, count
    return lower


def point(at: float, seconds: float, counted: Counts) -> Point:
    def ms(q: float) -> float | None:
        value = quantile(q, counted.buckets)
        return None if value is None else round(value * 1000, 3)

    return (round(at, 3), round(counted.requests / seconds, 3) if seconds > 0 else 0.0, ms(0.5), ms(0.99))


def gateway_requests() -> dict[str, float]:
    """Requests the gateway answered so far, by endpoint name (every upstream and code)."""
    found: dict[str, float] = {}
    for family in REGISTRY.collect():
        if family.name == "inferd_gateway_requests":
            for sample in family.samples:
                if sample.name == "inferd_gateway_requests_total":
                    name = sample.labels.get("endpoint", "")
                    found[name] = found.get(name, 0.0) + sample.value
    return found


class History:
    """The points kept, by ``service:ID`` and ``endpoint:NAME``, each an hour long at most."""

    def __init__(self, interval: float) -> None:
        self.points: dict[str, deque[Point]] = {}
        self.every(interval)

    def every(self, interval: float) -> None:
        """Sample every ``interval`` seconds from now on (what was kept is forgotten)."""
        self.interval = interval
        self.length = max(2, math.ceil(HOUR / interval))
        self.points.clear()

    def add(self, key: str, value: Point) -> None:
        self.points.setdefault(key, deque(maxlen=self.length)).append(value)

    def of(self, key: str) -> list[Point]:
        return list(self.points.get(key, ()))

    def keep_only(self, keys: Iterable[str]) -> None:
        """Forget what was deleted."""
        wanted = set(keys)
        for key in [key for key in self.points if key not in wanted]:
            del self.points[key]


class Sampler:
    """Every ``interval``: scrapes each running service and reads the gateway's counter, adding a
    point per service and endpoint to `history`."""

    def __init__(self, platform: Platform, history: History) -> None:
        self.platform, self.history = platform, history
        self.before: dict[str, Counts] = {}
        self.gateway_before: dict[str, float] = {}
        self.last = time.time()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="inferd console history")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=min(2.0, self.history.interval), trust_env=False) as http:
            while True:
                await asyncio.sleep(self.history.interval)
                try:
                    await self.tick(http)
                except Exception:  # a failed sample must not end the charts
                    logger.exception("sampling traffic for the console failed this time")

    async def tick(self, http: httpx.AsyncClient) -> None:
        store = self.platform.store
        services = store.services()
        endpoints = store.endpoints()
        running = [s for s in services if s.state is ServiceState.RUNNING]
        scraped = await asyncio.gather(
            *(self.scrape(http, s.id, self.platform.routing.addresses(s)) for s in running)
        )
        now = time.time()
        seconds, self.last = now - self.last, now
        interval: dict[str, Counts] = {}
        for service, counted in zip(running, scraped, strict=True):
            if counted is not None:
                interval[service.id] = counted.since(self.before.get(service.id))
                self.before[service.id] = counted
        for service in services:
            self.history.add(f"service:{service.id}", point(now, seconds, interval.get(service.id, Counts())))
        through = gateway_requests()
        for endpoint in endpoints:
            total = through.get(endpoint.name, 0.0)
            sent = max(0.0, total - self.gateway_before.get(endpoint.name, total))
            self.gateway_before[endpoint.name] = total
            latency = Counts()
            for route in endpoint.routes:
                if route.weight > 0 and route.service_id in interval:
                    latency.add(interval[route.service_id])
            latency.requests = sent
            self.history.add(f"endpoint:{endpoint.name}", point(now, seconds, latency))
        self.history.keep_only(
            [f"service:{s.id}" for s in services] + [f"endpoint:{e.name}" for e in endpoints]
        )

    async def scrape(self, http: httpx.AsyncClient, service_id: str, addresses: list[str]) -> Counts | None:
        token = self.platform.token_of(service_id)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        total, answered = Counts(), False
        for address in addresses:
            try:
                answer = await http.get(f"http://{address}{prometheus.PATH}", headers=headers)
                if answer.status_code == 200:
                    total.add(counts_of(answer.text))
                    answered = True
            except (httpx.HTTPError, ValueError):  # not answering, or not an exposition
                continue
        return total if answered else None


#: The one history of this process (the gateway's counters are process-wide too).
HISTORY = History(10.0)
