"""Triton's statistics extension against a real ``inferd serve`` with tritonclient (HTTP and gRPC,
on both gRPC servers): counts per model and version after successful and failed inferences, the
token the other metadata routes need, and an unknown model's 404."""

from __future__ import annotations

import time
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.protocols.triton.conftest import HEADERS, grpc_client, http_client
from tests.servers import RunningServer

GRPC_HEADERS = {key.lower(): value for key, value in HEADERS.items()}


def _http_infer(client: Any, rows: int) -> None:
    tensor = httpclient.InferInput("input-0", [rows, 4], "FP32")
    tensor.set_data_from_numpy(np.ones((rows, 4), np.float32))
    client.infer("iris", [tensor], headers=dict(HEADERS))


def _grpc_infer(client: Any, rows: int) -> None:
    tensor = grpcclient.InferInput("input-0", [rows, 4], "FP32")
    tensor.set_data_from_numpy(np.ones((rows, 4), np.float32))
    client.infer("iris", [tensor], headers=GRPC_HEADERS)


def _durations(stats: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {
        phase: (int(value.get("count", 0)), int(value.get("ns", 0)))
        for phase, value in stats["inference_stats"].items()
    }


def test_statistics_count_inferences_batches_and_failures(secured_iris: RunningServer) -> None:
    http, grpc = http_client(secured_iris), grpc_client(secured_iris)
    before = http.get_inference_statistics("iris", headers=dict(HEADERS))["model_stats"][0]
    started_ms = time.time() * 1000
    for _ in range(3):
        _http_infer(http, rows=2)
    _grpc_infer(grpc, rows=5)
    with pytest.raises(InferenceServerException, match="shape"):
        bad = httpclient.InferInput("input-0", [1, 3], "FP32")
        bad.set_data_from_numpy(np.ones((1, 3), np.float32))
        http.infer("iris", [bad], headers=dict(HEADERS))

    for answer in (
        http.get_inference_statistics("iris", headers=dict(HEADERS)),
        http.get_inference_statistics(headers=dict(HEADERS)),  # GET /v2/models/stats: every model
        grpc.get_inference_statistics("iris", headers=GRPC_HEADERS, as_json=True),
        grpc.get_inference_statistics(headers=GRPC_HEADERS, as_json=True),
    ):
        assert len(answer["model_stats"]) == 1, answer
        stats = answer["model_stats"][0]
        assert stats["name"] == "iris"
        assert int(stats["inference_count"]) - before["inference_count"] == 3 * 2 + 5
        assert int(stats["execution_count"]) - before["execution_count"] == 4
        assert int(stats["last_inference"]) >= started_ms - 1
        now, was = _durations(stats), _durations(before)
        assert now["success"][0] - was["success"][0] == 4
        assert now["fail"][0] - was["fail"][0] == 1
        for phase in ("success", "compute_infer", "compute_input", "compute_output"):
            assert now[phase][1] > was[phase][1], phase
        assert now["compute_infer"][0] - was["compute_infer"][0] == 4
        # the phases of the successes fit in their total
        spent = sum(now[p][1] for p in ("queue", "compute_input", "compute_infer", "compute_output"))
        assert spent <= now["success"][1]


def test_statistics_need_the_token_and_a_known_model(secured_iris: RunningServer) -> None:
    with httpx.Client(base_url=secured_iris.http_url, timeout=10) as client:
        for path in ("/v2/models/stats", "/v2/models/iris/stats", "/v2/models/iris/versions/1/stats"):
            refused = client.get(path)
            assert refused.status_code == 401, path
            assert "error" in refused.json()
        unknown = client.get("/v2/models/nope/stats", headers=dict(HEADERS))
        assert unknown.status_code == 404 and "nope" in unknown.json()["error"]
        # the model's metadata route still answers (a model named "stats" is not shadowed by it)
        assert client.get("/v2/models/iris", headers=dict(HEADERS)).status_code == 200
    grpc = grpc_client(secured_iris)
    with pytest.raises(InferenceServerException) as refused_call:
        grpc.get_inference_statistics("iris")
    assert refused_call.value.status() == "StatusCode.UNAUTHENTICATED"
    with pytest.raises(InferenceServerException) as unknown_call:
        grpc.get_inference_statistics("nope", headers=GRPC_HEADERS)
    assert unknown_call.value.status() == "StatusCode.NOT_FOUND"
