"""`metrics.Series` updates prometheus_client's values directly: what it records must be what the
public ``inc`` and ``observe`` would have (and an upgrade that moves those values must fail here)."""

from __future__ import annotations

import time

import pytest
from prometheus_client import REGISTRY

from inferd.core import metrics

LATENCIES = [0.0007, 0.003, 0.07, 0.3, 20.0]  # each well inside one bucket: 0.001, 0.005, 0.1, 0.5, +Inf


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
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
