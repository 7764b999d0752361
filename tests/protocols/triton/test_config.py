"""Triton's model configuration extension against real servers with tritonclient (HTTP and gRPC):
a model's tensors as Triton's TYPE_* and dims, max_batch_size and dynamic_batching from inferd's
adaptive batching, a repository load in Triton's terms keeping the keys it was given, the token,
and an unknown model."""

from __future__ import annotations

import json

import httpx
import pytest
from tritonclient.utils import InferenceServerException

from tests.protocols.triton.conftest import HEADERS, grpc_client, http_client
from tests.servers import RunningServer

GRPC_HEADERS = {key.lower(): value for key, value in HEADERS.items()}


def _numbers(value: object) -> object:
    """gRPC's JSON gives 64-bit integers as strings: compare them as numbers."""
    if isinstance(value, dict):
        return {key: _numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers(item) for item in value]
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def _tensor(config: dict[str, object]) -> tuple[object, ...]:
    return config["name"], config["data_type"], config["dims"]


def test_config_of_a_model_that_takes_batches_without_adaptive_batching(
    secured_iris: RunningServer,
) -> None:
    http = http_client(secured_iris).get_model_config("iris", headers=dict(HEADERS))
    grpc = grpc_client(secured_iris).get_model_config("iris", headers=GRPC_HEADERS, as_json=True)["config"]
    for config in (http, _numbers(grpc)):
        assert config["name"] == "iris" and config["platform"] == "python"
        # a batch dimension first, of any number of rows: dims leave it out
        assert config["max_batch_size"] == 2**31 - 1
        assert config["input"][0]["name"] == "input-0"
        assert (config["input"][0]["data_type"], config["input"][0]["dims"]) == ("TYPE_FP32", [4])
        assert [_tensor(output) for output in config["output"]] == [
            ("label", "TYPE_INT64", [1]),
            ("probabilities", "TYPE_FP32", [3]),
        ]
        assert "dynamic_batching" not in config
    assert http["output"][0]["reshape"] == {"shape": []}  # one value a row: [1] reshaped to []
    assert http["input"][0]["format"] == "FORMAT_NONE"  # what Triton's image client reads


def test_config_needs_the_token_and_a_known_model(secured_iris: RunningServer) -> None:
    with httpx.Client(base_url=secured_iris.http_url, timeout=10) as client:
        for path in ("/v2/models/iris/config", "/v2/models/iris/versions/1/config"):
            refused = client.get(path)
            assert refused.status_code == 401 and "error" in refused.json(), path
        unknown = client.get("/v2/models/nope/config", headers=HEADERS)
        assert unknown.status_code == 404 and "nope" in unknown.json()["error"]
    with pytest.raises(InferenceServerException) as refused_call:
        grpc_client(secured_iris).get_model_config("iris")
    assert refused_call.value.status() == "StatusCode.UNAUTHENTICATED"
    with pytest.raises(InferenceServerException) as unknown_call:
        grpc_client(secured_iris).get_model_config("nope", headers=GRPC_HEADERS)
    assert unknown_call.value.status() == "StatusCode.NOT_FOUND"


def test_config_of_a_batching_model_and_a_triton_load(repository_server: RunningServer) -> None:
    http, grpc = http_client(repository_server), grpc_client(repository_server)
    for config in (
        http.get_model_config("plain", headers=dict(HEADERS)),
        _numbers(grpc.get_model_config("plain", headers=GRPC_HEADERS, as_json=True)["config"]),
    ):
        assert config["max_batch_size"] == 8
        assert [_tensor(tensor) for tensor in config["input"]] == [("x", "TYPE_FP32", [4])]  # no batch dim
        assert config["dynamic_batching"] == {
            "preferred_batch_size": [8],
            "max_queue_delay_microseconds": 2000,
        }

    given = {
        "name": "plain",
        "backend": "python",
        "max_batch_size": 4,
        "dynamic_batching": {"max_queue_delay_microseconds": 500},
        "instance_group": [{"count": 2, "kind": "KIND_CPU"}],
        "parameters": {"mode": {"string_value": "fast"}},
        "version_policy": {"latest": {"num_versions": 1}},
    }
    http.load_model("plain", config=json.dumps(given), headers=dict(HEADERS))
    config = http.get_model_config("plain", headers=dict(HEADERS))
    for key, value in given.items():
        assert config[key] == value, key  # REST answers every key the load gave
    assert [_tensor(tensor) for tensor in config["input"]] == [("x", "TYPE_FP32", [4])]
    grpc_config = _numbers(grpc.get_model_config("plain", headers=GRPC_HEADERS, as_json=True)["config"])
    assert grpc_config["backend"] == "python" and grpc_config["max_batch_size"] == 4
    assert grpc_config["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    assert grpc_config["parameters"] == {"mode": {"string_value": "fast"}}
