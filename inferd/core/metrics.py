"""The Prometheus metrics inferd records. Exposition lives in the server; this module only counts.

Gauges declare how they combine across worker processes, so the numbers stay right when
``PROMETHEUS_MULTIPROC_DIR`` is set by the supervisor.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "inferd_requests_total",
    "Inference requests answered, by model, protocol and outcome.",
    ["model", "protocol", "outcome"],
)
LATENCY = Histogram(
    "inferd_request_duration_seconds",
    "Time spent answering inference requests, by model and protocol.",
    ["model", "protocol"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
IN_FLIGHT = Gauge(
    "inferd_requests_in_flight",
    "Inference requests being answered right now, by model and protocol.",
    ["model", "protocol"],
    multiprocess_mode="livesum",
)


class _Series:
    """The labelled children of one (model, protocol), looked up once instead of per request."""

    def __init__(self, model: str, protocol: str) -> None:
        self.in_flight = IN_FLIGHT.labels(model, protocol)
        self.latency = LATENCY.labels(model, protocol)
        self.ok = REQUESTS.labels(model, protocol, "ok")
        self.error = REQUESTS.labels(model, protocol, "error")


_series: dict[tuple[str, str], _Series] = {}


@contextmanager
def observe(model: str, protocol: str) -> Iterator[None]:
    """Count one inference request: in-flight while it runs, then latency and outcome."""
    series = _series.get((model, protocol))
    if series is None:
        series = _series[model, protocol] = _Series(model, protocol)
    series.in_flight.inc()
    started = time.perf_counter()
    outcome = series.error
    try:
        yield
        outcome = series.ok
    finally:
        series.in_flight.dec()
        series.latency.observe(time.perf_counter() - started)
        outcome.inc()
