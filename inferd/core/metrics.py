"""The Prometheus metrics inferd records. Exposition lives in the server; this module only counts.

They are inferd's own small families (`inferd.core.counters`), so a worker loads prometheus_client
only when its metrics are read (`counters.expose` hands them to its registry then). Gauges declare
how they combine across worker processes, so the numbers stay right when ``PROMETHEUS_MULTIPROC_DIR``
is set by the supervisor.
"""

from __future__ import annotations

import bisect
import time
from typing import Any

from inferd.core.counters import Counter, Gauge, Histogram

REQUESTS = Counter(
    "inferd_requests_total",
    "Inference requests answered, by model, protocol and outcome.",
    ["model", "protocol", "outcome"],
)
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LATENCY = Histogram(
    "inferd_request_duration_seconds",
    "Time spent answering inference requests, by model and protocol.",
    ["model", "protocol"],
    buckets=BUCKETS,
)
IN_FLIGHT = Gauge(
    "inferd_requests_in_flight",
    "Inference requests being answered right now, by model and protocol.",
    ["model", "protocol"],
    multiprocess_mode="livesum",
)

MODEL_LOADS = Counter(
    "inferd_model_loads_total", "Models loaded, by model and outcome (ok, error).", ["model", "outcome"]
)
MODEL_UNLOADS = Counter("inferd_model_unloads_total", "Models unloaded, by model.", ["model"])
MODEL_FETCHES = Counter(
    "inferd_model_fetches_total",
    "Models named by a storage URI fetched, by scheme and outcome (download: fetched from the store, "
    "cache: found in the model cache, error).",
    ["scheme", "outcome"],
)
MODEL_FETCHED_BYTES = Counter(
    "inferd_model_fetched_bytes_total", "Bytes downloaded into the model cache, by scheme.", ["scheme"]
)

RESTARTS = Counter(
    "inferd_worker_restarts_total",
    "Processes running user code that were replaced, by kind of process (a worker, or the model "
    "process of an isolated worker) and reason (exit, signal, memory, hang).",
    ["process", "reason"],
)


class Observer:
    """One labelled child of a histogram, observed directly (see `Series` for why): as ``observe``,
    one value in the first bucket whose bound is at least it, and in the sum. The child is one of
    `counters.Histogram` or of a prometheus_client ``Histogram`` (a dialect's): both hold these."""

    def __init__(self, child: Any) -> None:
        self.sum, self.buckets = child._sum, child._buckets
        self.bounds: list[float] = child._upper_bounds

    def observe(self, value: float) -> None:
        self.sum.inc(value)
        self.buckets[bisect.bisect_left(self.bounds, value)].inc(1)


class Series:
    """The labelled children of one (model, protocol), looked up once instead of per request.

    A request updates the values behind the children directly (locked floats or, with
    ``PROMETHEUS_MULTIPROC_DIR``, prometheus_client's shared-file values): the public
    ``inc`` and ``observe`` check on every call what cannot change once a child exists, and with those
    checks the metrics were the largest part of a small request's Python after the handler's own.
    `tests/core/test_metrics.py` holds this to what the public methods record."""

    def __init__(self, model: str, protocol: str) -> None:
        self.in_flight = IN_FLIGHT.labels(model, protocol)._value
        self.ok = REQUESTS.labels(model, protocol, "ok")._value
        self.error = REQUESTS.labels(model, protocol, "error")._value
        self.latency = Observer(LATENCY.labels(model, protocol))

    def begin(self) -> float:
        """Count a request in flight; returns its start time for `end`."""
        self.in_flight.inc(1)
        return time.perf_counter()

    def end(self, started: float, ok: bool) -> None:
        elapsed = time.perf_counter() - started
        self.in_flight.inc(-1)
        self.latency.observe(elapsed)
        (self.ok if ok else self.error).inc(1)


_series: dict[tuple[str, str], Series] = {}


def series(model: str, protocol: str) -> Series:
    """The metrics of inference requests to ``model`` over ``protocol``."""
    found = _series.get((model, protocol))
    if found is None:
        found = _series[model, protocol] = Series(model, protocol)
    return found


_counted: dict[tuple[Counter, tuple[str, ...]], Any] = {}


def count(counter: Counter, *labels: str) -> None:
    """``counter.labels(*labels).inc()``, the labelled child's value looked up once (as `Series`
    does): a multiplexed model (``--max-loaded-models``) is loaded and unloaded on its calls' path,
    where the lookup cost as much as the rest of that bookkeeping."""
    value = _counted.get((counter, labels))
    if value is None:
        value = _counted[counter, labels] = counter.labels(*labels)._value
    value.inc(1)


PAYLOAD_EVENTS = Counter(
    "inferd_payload_log_events_total",
    "Payload log events (CloudEvents) the sink accepted, by model and type (request, response).",
    ["model", "type"],
)
PAYLOAD_DROPPED = Counter(
    "inferd_payload_log_dropped_total",
    "Payload log events dropped unsent, by model and reason (queue_full: the sink is slower than the "
    "requests; shutdown: still queued when the flush deadline passed).",
    ["model", "reason"],
)
PAYLOAD_FAILURES = Counter(
    "inferd_payload_log_failures_total",
    "Payload log events the sink refused (a status other than 2xx) or that could not reach it, by model.",
    ["model"],
)
