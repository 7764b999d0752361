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


@contextmanager
def observe(model: str, protocol: str) -> Iterator[None]:
    """Count one inference request: in-flight while it runs, then latency and outcome."""
    in_flight = IN_FLIGHT.labels(model, protocol)
    in_flight.inc()
    started = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        in_flight.dec()
        LATENCY.labels(model, protocol).observe(time.perf_counter() - started)
        REQUESTS.labels(model, protocol, outcome).inc()
