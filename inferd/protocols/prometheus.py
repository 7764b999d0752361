"""The Prometheus exposition: this process's registry, or every worker's through the multiprocess dir.

Served at ``/metrics`` by the server, and at whatever path a dialect's platform scrapes (Seldon's
``PREDICTIVE_UNIT_METRICS_ENDPOINT``). prometheus_client is imported when metrics are first read,
not when the routes are made: a worker nobody scrapes never loads it (`inferd.core.counters`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inferd.core.counters import expose

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

PATH = "/metrics"


def registry() -> CollectorRegistry:
    """Every worker's metrics (read from the multiprocess dir) or this process's registry, with
    inferd's own families in it."""
    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    expose()
    return REGISTRY


async def endpoint(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(registry()), media_type=CONTENT_TYPE_LATEST)


@dataclass
class Traffic:
    """One model's inference requests so far, over every protocol (and every worker)."""

    ok: int = 0
    error: int = 0
    seconds: float = 0.0

    @property
    def mean_ms(self) -> float | None:
        answered = self.ok + self.error
        return round(1000 * self.seconds / answered, 3) if answered else None


def traffic() -> dict[str, Traffic]:
    """Requests and time spent by model, read from the metrics `/metrics` exposes (so the numbers are
    the same as a scrape's)."""
    found: dict[str, Traffic] = defaultdict(Traffic)
    for family in registry().collect():
        for sample in family.samples:
            model = sample.labels.get("model")
            if model is None:
                continue
            if sample.name == "inferd_requests_total":
                outcome = sample.labels.get("outcome")
                if outcome in ("ok", "error"):
                    setattr(found[model], outcome, getattr(found[model], outcome) + int(sample.value))
            elif sample.name == "inferd_request_duration_seconds_sum":
                found[model].seconds += sample.value
    return dict(found)


def routes() -> list[Route]:
    return [Route(PATH, endpoint, methods=["GET"])]
