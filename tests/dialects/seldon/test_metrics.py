"""Custom metrics on the Prometheus endpoint: types, labels, the Seldon endpoint path and port, and
the sum over worker processes."""

from __future__ import annotations

import re

import grpc
import httpx
import pytest
from google.protobuf import json_format

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from tests.dialects.seldon.conftest import COMPONENTS, DEPLOYMENT_ENV
from tests.servers import RunningServer, free_port, serve

LABELS = (
    'deployment_name="mydep",image_name="seldonio/everything",image_version="0.3",kind="test",'
    'method="predict",model_image="seldonio/everything",model_name="classifier",model_version="0.3",'
    'predictor_name="main",predictor_version="v7",seldon_deployment_name="mydep",worker_id="'
)


def samples(text: str, name: str) -> list[tuple[str, float]]:
    """(labels, value) of every sample of ``name``."""
    pattern = re.compile(rf"^{re.escape(name)}\{{(.*)\}} (\S+)$", re.MULTILINE)
    return [(labels, float(value)) for labels, value in pattern.findall(text)]


def total(text: str, name: str, **labels: str) -> float:
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    return sum(value for found, value in samples(text, name) if all(w in found for w in wanted))


def test_counter_gauge_and_timer_with_seldon_labels(everything: httpx.Client) -> None:
    before = total(everything.get("/prometheus").text, "everything_calls_total", method="predict")
    for _ in range(3):
        assert everything.post("/predict", json={"data": {"ndarray": [[1, 2]]}}).status_code == 200
    text = everything.get("/prometheus").text
    assert total(text, "everything_calls_total", method="predict") == before + 3
    counter = samples(text, "everything_calls_total")
    assert any(labels.startswith(LABELS) for labels, _ in counter), counter
    assert total(text, "everything_gauge", method="predict") == 42
    assert total(text, "everything_timer_count", method="predict") >= 3
    # TIMER values are milliseconds, observed in seconds: 20.2 ms lands above the 0.0187 s bound.
    assert total(text, "everything_timer_sum", method="predict") == pytest.approx(
        0.0202 * total(text, "everything_timer_count", method="predict")
    )
    buckets = samples(text, "everything_timer_bucket")
    bounds = sorted({float(re.search(r'le="([^"]+)"', labels).group(1)) for labels, _ in buckets})  # type: ignore[union-attr]
    assert len(bounds) == 52 and bounds[0] == 0.0 and bounds[1] == 0.001 and bounds[-2] == pytest.approx(30)


def test_runtime_timer_and_method_labels(everything: httpx.Client) -> None:
    everything.post("/predict", json={"strData": "timer"})
    everything.post("/transform-input", json={"data": {"ndarray": [[1]]}})
    everything.get("/health/status")
    text = everything.get("/metrics").text
    assert total(text, "runtime_timer_sum") == pytest.approx(1.5 * total(text, "runtime_timer_count"))
    for method in ("inputtransform", "health"):
        assert total(text, "everything_calls_total", method=method) >= 1


def test_bad_metric_is_500(everything: httpx.Client) -> None:
    response = everything.post("/predict", json={"strData": "bad metric"})
    assert response.status_code == 500
    assert response.json()["status"]["reason"] == "MICROSERVICE_BAD_METRIC"
    assert everything.post("/predict", json={"strData": "x"}).status_code == 200


def test_high_level_metric_without_type_is_a_counter(everything_server: RunningServer) -> None:
    """A high-level answer's metric without ``type`` counts as a COUNTER too, over REST and gRPC."""
    assert everything_server.grpc_address is not None
    metrics_url = f"{everything_server.http_url}/metrics"
    before = total(httpx.get(metrics_url).text, "high_untyped_total", method="predict")
    answer = httpx.post(f"{everything_server.http_url}/predict", json={"strData": "untyped"})
    assert answer.status_code == 200, answer.text
    assert {"key": "high_untyped", "type": "COUNTER", "value": 2} in answer.json()["meta"]["metrics"]
    with grpc.insecure_channel(everything_server.grpc_address) as channel:
        reply = pb_grpc.ModelStub(channel).Predict(pb.SeldonMessage(strData="untyped"))
    assert {"key": "high_untyped", "value": 2.0} in json_format.MessageToDict(reply.meta)["metrics"]
    after = total(httpx.get(metrics_url).text, "high_untyped_total", method="predict")
    assert after == before + 4


def test_feedback_counts_rewards(everything: httpx.Client) -> None:
    text = everything.get("/metrics").text
    count, rewards = (
        total(text, "seldon_api_model_feedback_total"),
        total(text, "seldon_api_model_feedback_reward_total"),
    )
    everything.post("/send-feedback", json={"request": {"data": {"ndarray": [[1]]}}, "reward": 2.5})
    everything.post("/send-feedback", json={"request": {"data": {"ndarray": [[1]]}}, "reward": 0})
    text = everything.get("/metrics").text
    assert total(text, "seldon_api_model_feedback_total") == count + 1
    assert total(text, "seldon_api_model_feedback_reward_total") == rewards + 2.5


def test_metrics_port_sums_every_worker() -> None:
    with serve(
        "Everything", "--dialect", "seldon", "--workers", "2", "--metrics-port", "0", cwd=COMPONENTS
    ) as server:
        assert server.metrics_url is not None
        for _ in range(20):  # a new connection each time, so the kernel spreads them over the workers
            with httpx.Client(base_url=server.http_url) as http:
                assert http.post("/predict", json={"data": {"ndarray": [[1]]}}).status_code == 200
        for url in (server.metrics_url + "/metrics", server.http_url + "/metrics"):
            text = httpx.get(url).text
            assert total(text, "everything_calls_total", method="predict") == 20
        # inferd's own series on the HTTP port only: the metrics port is Seldon's metrics server.
        served = httpx.get(server.http_url + "/metrics").text
        assert total(served, "inferd_requests_total", model="everything", protocol="seldon") == 20
        assert "inferd_requests_total" not in httpx.get(server.metrics_url + "/metrics").text


def test_seldon_port_variables_are_honoured() -> None:
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    env = {
        "PREDICTIVE_UNIT_HTTP_SERVICE_PORT": str(http_port),
        "PREDICTIVE_UNIT_GRPC_SERVICE_PORT": str(grpc_port),
        "PREDICTIVE_UNIT_METRICS_SERVICE_PORT": str(metrics_port),
    }
    with serve("Identity", "--dialect", "seldon", env=env, cwd=COMPONENTS, free_ports=False) as server:
        assert server.http_url.endswith(f":{http_port}")
        assert server.grpc_address is not None and server.grpc_address.endswith(f":{grpc_port}")
        assert server.metrics_url is not None and server.metrics_url.endswith(f":{metrics_port}")
        assert httpx.get(f"{server.metrics_url}/metrics").status_code == 200
        assert httpx.get(f"{server.http_url}/health/ping").text == "pong"


def test_metrics_port_is_seldons_metrics_server() -> None:
    """The operator's PREDICTIVE_UNIT_METRICS_SERVICE_PORT and PREDICTIVE_UNIT_METRICS_ENDPOINT: that
    path on that port serves the Seldon series alone (custom metrics, feedback counters, their labels),
    as seldon-core's metrics server did; inferd's and the process's series stay on the HTTP port."""
    env = {**DEPLOYMENT_ENV, "PREDICTIVE_UNIT_METRICS_SERVICE_PORT": "0"}
    with serve("Everything", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        assert server.metrics_url is not None
        with httpx.Client(base_url=server.http_url) as http:
            assert http.post("/predict", json={"data": {"ndarray": [[1]]}}).status_code == 200
            assert http.post("/send-feedback", json={"reward": 2}).status_code == 200
            http_metrics = http.get("/metrics").text
        seldon = httpx.get(f"{server.metrics_url}/prometheus")
        assert seldon.status_code == 200 and seldon.headers["content-type"].startswith("text/plain")
        assert httpx.get(f"{server.metrics_url}/metrics").status_code == 404
        families = set(re.findall(r"^# TYPE (\S+) ", seldon.text, re.MULTILINE))
        assert families == {
            "everything_calls_total",
            "everything_gauge",
            "everything_timer",
            "seldon_api_model_feedback_total",
            "seldon_api_model_feedback_reward_total",
        }
        assert "_created" not in seldon.text
        assert total(seldon.text, "everything_calls_total", method="predict", model_name="classifier") == 1
        assert total(seldon.text, "seldon_api_model_feedback_reward_total", method="feedback") == 2
        for own in ("inferd_requests_total", "process_cpu_seconds_total", "python_gc_objects_collected"):
            assert own in http_metrics and own not in seldon.text
        assert "everything_calls_total{" in http_metrics


def test_options_win_over_seldon_variables() -> None:
    env = {"PREDICTIVE_UNIT_HTTP_SERVICE_PORT": str(free_port())}
    with serve("Identity", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        assert not server.http_url.endswith(f":{env['PREDICTIVE_UNIT_HTTP_SERVICE_PORT']}")


def test_raw_metric_without_type_is_a_counter(raw_server: RunningServer) -> None:
    """seldon-core records a raw answer's metric without ``type`` as a COUNTER: over gRPC a
    SeldonMessage's COUNTER never has one (the protobuf enum's default)."""
    assert raw_server.grpc_address is not None
    metrics_url = f"{raw_server.http_url}/metrics"
    before = httpx.get(metrics_url).text
    with httpx.Client(base_url=raw_server.http_url) as http:
        for _ in range(2):
            answer = http.post("/predict", json={"strData": "untyped"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["meta"]["metrics"] == [{"key": "raw_untyped", "value": 4}]
    with grpc.insecure_channel(raw_server.grpc_address) as channel:
        reply = pb_grpc.ModelStub(channel).Predict(pb.SeldonMessage(strData="x"))
    assert json_format.MessageToDict(reply) == {
        "strData": "raw grpc",
        "meta": {"metrics": [{"key": "raw_grpc_counter", "value": 3.0}]},
    }
    after = httpx.get(metrics_url).text
    assert total(after, "raw_untyped_total") == total(before, "raw_untyped_total") + 8
    grpc_counter = "raw_grpc_counter_total"
    assert total(after, grpc_counter, method="predict") == total(before, grpc_counter) + 3
