"""`metrics.Series` updates the metrics' values directly: what it records must be what the public
``inc`` and ``observe`` would have (and an upgrade that moves those values must fail here). inferd's
own families (`inferd.core.counters`) must be collected exactly as prometheus_client's own would be."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from inferd.core import counters, metrics
from inferd.protocols.prometheus import registry

LATENCIES = [0.0007, 0.003, 0.07, 0.3, 20.0]  # each well inside one bucket: 0.001, 0.005, 0.1, 0.5, +Inf


def sample(name: str, **labels: str) -> float:
    value = registry().get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_a_series_records_what_the_public_methods_would() -> None:
    series = metrics.series("series-test", "rest")
    labels = {"model": "series-test", "protocol": "rest"}
    for index, latency in enumerate(LATENCIES):
        series.begin()
        assert sample("inferd_requests_in_flight", **labels) == 1
        series.end(time.perf_counter() - latency, ok=index != 1)
        assert sample("inferd_requests_in_flight", **labels) == 0
    assert sample("inferd_requests_total", **labels, outcome="ok") == 4
    assert sample("inferd_requests_total", **labels, outcome="error") == 1
    assert sample("inferd_request_duration_seconds_count", **labels) == 5
    assert sample("inferd_request_duration_seconds_sum", **labels) == pytest.approx(sum(LATENCIES), abs=0.01)
    expected = {"0.0005": 0, "0.001": 1, "0.0025": 1, "0.005": 2, "0.05": 2, "0.1": 3, "0.5": 4, "10.0": 4}
    expected["+Inf"] = 5
    for bound, count in expected.items():
        assert sample("inferd_request_duration_seconds_bucket", **labels, le=bound) == count, bound


def test_a_series_is_made_once_per_model_and_protocol() -> None:
    assert metrics.series("series-once", "rest") is metrics.series("series-once", "rest")
    assert metrics.series("series-once", "rest") is not metrics.series("series-once", "grpc")


CREATED = re.compile(rb"^(\w+_created\{[^}]*\}) [0-9.e+]+$", re.MULTILINE)


@pytest.fixture
def families() -> Iterator[counters.Families]:
    """A collector of the test's own families, kept out of the process's."""
    before = list(counters.FAMILIES.families)
    collector = counters.Families()
    yield collector
    counters.FAMILIES.families[:] = before


def test_inferd_families_are_collected_as_prometheus_clients_own(families: counters.Families) -> None:
    theirs = CollectorRegistry()
    made = []
    for module, registry_ in ((counters, None), (prometheus_client, theirs)):
        extra = {} if registry_ is None else {"registry": registry_}
        counter = module.Counter("t_requests_total", "Requests.", ["model", "outcome"], **extra)
        gauge = module.Gauge("t_in_flight", "In flight.", ["model"], multiprocess_mode="livesum", **extra)
        latency = module.Histogram("t_seconds", "Latency.", ["model"], buckets=metrics.BUCKETS, **extra)
        signed = module.Histogram("t_value", "Values.", ["api"], buckets=(-10, -1, 0, 1, 10, 100), **extra)
        made.append((counter, gauge, latency, signed))
    for counter, gauge, latency, signed in made:
        counter.labels("a", "ok").inc()
        counter.labels("a", "ok").inc(2.5)
        counter.labels("b", "error").inc()
        gauge.labels("a").inc()
        gauge.labels("a").inc()
        gauge.labels("a").dec()
        gauge.labels("b").set(7)
        for value in (0.0004, 0.003, 0.003, 1.0, 30.0):
            latency.labels("a").observe(value)
        for value in (-5, 0, 0.5, 99, 1000):
            signed.labels("api").observe(value)
    for family in made[0]:
        families.add(family)
    ours = CollectorRegistry()
    ours.register(families)
    # The text scraped, but for the creation times (each family's own clock)
    assert CREATED.sub(rb"\1 T", generate_latest(ours)) == CREATED.sub(rb"\1 T", generate_latest(theirs))
    assert b't_requests_total{model="a",outcome="ok"} 3.5' in generate_latest(ours)


def test_count_records_what_inc_would() -> None:
    before = sample("inferd_model_loads_total", model="count-test", outcome="ok")
    for _ in range(3):
        metrics.count(metrics.MODEL_LOADS, "count-test", "ok")
    metrics.MODEL_LOADS.labels("count-test", "ok").inc()
    assert sample("inferd_model_loads_total", model="count-test", outcome="ok") == before + 4
    assert sample("inferd_model_loads_total", model="count-test", outcome="error") == 0
