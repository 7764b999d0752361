"""The V2 REST protocol against a real server, with httpx and with tritonclient.http."""

from __future__ import annotations

import gzip
import struct
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from tests.servers import RunningServer, client_of

IRIS_ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def iris_request(data: object, shape: list[int] | None = None, **extra: object) -> dict[str, object]:
    tensor = {"name": "input-0", "shape": shape or [2, 4], "datatype": "FP32", "data": data}
    return {"inputs": [tensor], **extra}


models = client_of("models_server")


@pytest.fixture
def triton_iris(iris_server: RunningServer) -> Iterator[triton.InferenceServerClient]:
    client = triton.InferenceServerClient(iris_server.http_address)
    yield client
    client.close()


def test_health_and_server_metadata(client: httpx.Client) -> None:
    assert client.get("/v2/health/live").status_code == 200
    assert client.get("/v2/health/ready").status_code == 200
    body = client.get("/v2").json()
    assert body["name"] == "inferd"
    assert set(body["extensions"]) == {
        "binary_tensor_data",
        "classification",
        "model_configuration",
        "model_repository",
        "statistics",
    }


def test_model_metadata_and_ready(client: httpx.Client) -> None:
    metadata = client.get("/v2/models/iris").json()
    assert metadata["inputs"] == [{"name": "input-0", "datatype": "FP32", "shape": [-1, 4]}]
    assert [output["name"] for output in metadata["outputs"]] == ["label", "probabilities"]
    assert client.get("/v2/models/iris/ready").status_code == 200
    missing = client.get("/v2/models/nope/ready")
    assert missing.status_code == 404
    assert "nope" in missing.json()["error"]


@pytest.mark.parametrize("data", [IRIS_ROWS, [value for row in IRIS_ROWS for value in row]])
def test_infer_accepts_nested_and_flat_data(client: httpx.Client, data: object) -> None:
    response = client.post("/v2/models/iris/infer", json=iris_request(data, id="req-7"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == "req-7"
    assert body["model_name"] == "iris"
    label = next(output for output in body["outputs"] if output["name"] == "label")
    assert label == {"name": "label", "datatype": "INT64", "shape": [2], "data": [0, 2]}
    probabilities = next(output for output in body["outputs"] if output["name"] == "probabilities")
    assert probabilities["shape"] == [2, 3] and len(probabilities["data"]) == 6  # flat
    assert np.allclose(np.reshape(probabilities["data"], (2, 3)).sum(axis=1), 1.0, atol=1e-5)


def test_output_selection_keeps_the_requested_order(client: httpx.Client) -> None:
    request = iris_request(IRIS_ROWS, outputs=[{"name": "probabilities"}, {"name": "label"}])
    body = client.post("/v2/models/iris/infer", json=request).json()
    assert [output["name"] for output in body["outputs"]] == ["probabilities", "label"]
    only = client.post("/v2/models/iris/infer", json=iris_request(IRIS_ROWS, outputs=[{"name": "label"}]))
    assert [output["name"] for output in only.json()["outputs"]] == ["label"]
    assert "id" not in only.json()


def test_versioned_routes(client: httpx.Client) -> None:
    # the iris example has no version label: any explicit version is unknown
    response = client.post("/v2/models/iris/versions/3/infer", json=iris_request(IRIS_ROWS))
    assert response.status_code == 404
    assert "version" in response.json()["error"]


@pytest.mark.parametrize(
    ("request_body", "status", "fragment"),
    [
        (b"{not json", 400, "Invalid JSON"),
        (b'{"inputs": "x"}', 400, "inputs"),
        (iris_request(IRIS_ROWS, shape=[3, 4]), 400, "shape [3, 4] needs 12"),
        (iris_request([["a", "b", "c", "d"]] * 2), 400, "strings"),
        (iris_request([[1, 2], [3, 4, 5]]), 400, "regular nested list"),
        (iris_request(IRIS_ROWS, shape=[8]), 400, "shape [8], the model expects [-1, 4]"),
        (iris_request(IRIS_ROWS, outputs=[{"name": "nope"}]), 400, "unknown output 'nope'"),
        ({"inputs": [{"name": "x", "shape": [1], "datatype": "FP33", "data": [1]}]}, 400, "unknown datatype"),
        (
            {"inputs": [{"name": "other", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
            400,
            "other",
        ),
        (
            {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "INT32", "data": [1, 2, 3, 4]}]},
            400,
            "FP32",
        ),
        (
            {"inputs": [{"name": "input-0", "shape": [-1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
            400,
            "shape",
        ),
    ],
)
def test_bad_requests_get_a_clear_4xx(
    client: httpx.Client, request_body: object, status: int, fragment: str
) -> None:
    if isinstance(request_body, bytes):
        response = client.post("/v2/models/iris/infer", content=request_body)
    else:
        response = client.post("/v2/models/iris/infer", json=request_body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert fragment in response.json()["error"]
    assert client.post("/v2/models/iris/infer", json=iris_request(IRIS_ROWS)).status_code == 200


def test_unknown_model_is_404(client: httpx.Client) -> None:
    response = client.post("/v2/models/nope/infer", json=iris_request(IRIS_ROWS))
    assert response.status_code == 404
    assert response.json() == {"error": "model 'nope' is not served here"}
    assert client.get("/v2/models/nope").status_code == 404


def test_unknown_route_is_json_404(client: httpx.Client) -> None:
    response = client.get("/v3/whatever")
    assert response.status_code == 404
    assert "error" in response.json()


@pytest.mark.parametrize(
    ("datatype", "data"),
    [
        ("BOOL", [True, False, True, True]),
        ("UINT8", [0, 1, 254, 255]),
        ("UINT16", [0, 1, 65534, 65535]),
        ("UINT32", [0, 1, 2, 4294967295]),
        ("UINT64", [0, 1, 2, 18446744073709551615]),
        ("INT8", [-128, -1, 0, 127]),
        ("INT16", [-32768, -1, 0, 32767]),
        ("INT32", [-2147483648, -1, 0, 2147483647]),
        ("INT64", [-9223372036854775808, -1, 0, 9223372036854775807]),
        ("FP16", [0.5, -1.25, 2.0, 1024.0]),
        ("FP32", [0.5, -1.25, 2.0, 3.5e8]),
        ("FP64", [0.1, -1.25, 2.0, 1e300]),
        ("BYTES", ["a", "", "ünï", "long text"]),
    ],
)
def test_every_datatype_round_trips_as_json(models: httpx.Client, datatype: str, data: list[object]) -> None:
    request = {"inputs": [{"name": "x", "shape": [2, 2], "datatype": datatype, "data": data}]}
    response = models.post("/v2/models/echo/infer", json=request)
    assert response.status_code == 200, response.text
    (output,) = response.json()["outputs"]
    assert output == {"name": "x", "datatype": datatype, "shape": [2, 2], "data": data}


@pytest.mark.parametrize(
    ("datatype", "data", "fragment"),
    [
        ("UINT8", [0, 1, 2, 256], "outside the range"),
        ("INT32", [0.5, 1, 2, 3], "float values"),
        ("BOOL", [1, 0, 1, 0], "integers"),
        ("BYTES", [1, 2, 3, 4], "int values"),
    ],
)
def test_data_that_does_not_match_its_datatype_is_400(
    models: httpx.Client, datatype: str, data: list[object], fragment: str
) -> None:
    request = {"inputs": [{"name": "x", "shape": [4], "datatype": datatype, "data": data}]}
    response = models.post("/v2/models/echo/infer", json=request)
    assert response.status_code == 400
    assert fragment in response.json()["error"]


def test_bytes_that_are_not_utf8_come_back_binary(models: httpx.Client) -> None:
    request = {"inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": ["ab", "cd"]}]}
    response = models.post("/v2/models/upper/infer", json=request)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    length = int(response.headers["inference-header-content-length"])
    header = httpx.Response(200, content=response.content[:length]).json()
    upper, raw = header["outputs"]
    assert upper["data"] == ["AB", "CD"]
    assert raw["parameters"] == {"binary_data_size": 6}
    assert response.content[length:] == struct.pack("<I", 2) + b"\xff\xfe"


def test_binary_request_and_response_by_hand(models: httpx.Client) -> None:
    values = np.arange(6, dtype=np.int16).reshape(2, 3)
    header = {
        "inputs": [
            {"name": "x", "shape": [2, 3], "datatype": "INT16", "parameters": {"binary_data_size": 12}}
        ],
        "outputs": [{"name": "x", "parameters": {"binary_data": True}}],
    }
    head = httpx.Request("POST", "/", json=header).content
    response = models.post(
        "/v2/models/echo/infer",
        content=head + values.tobytes(),
        headers={"Inference-Header-Content-Length": str(len(head))},
    )
    assert response.status_code == 200, response.text
    length = int(response.headers["inference-header-content-length"])
    assert np.array_equal(np.frombuffer(response.content[length:], dtype="<i2").reshape(2, 3), values)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_16_mib_binary_tensor_round_trips_byte_exact(models: httpx.Client, framing: str) -> None:
    """A body the server receives in many chunks (of a declared length, or chunked with none) is
    decoded whole, and the binary answer carries the very same bytes."""
    blob = np.random.default_rng(26).standard_normal(4 * 2**20, dtype=np.float32).tobytes()
    header = {
        "inputs": [
            {
                "name": "x",
                "shape": [1, 4 * 2**20],
                "datatype": "FP32",
                "parameters": {"binary_data_size": len(blob)},
            }
        ],
        "parameters": {"binary_data_output": True},
    }
    head = httpx.Request("POST", "/", json=header).content
    body = head + blob
    content = (
        body
        if framing == "content-length"
        else iter([body[i : i + 2**20] for i in range(0, len(body), 2**20)])
    )
    response = models.post(
        "/v2/models/echo/infer", content=content, headers={"Inference-Header-Content-Length": str(len(head))}
    )
    assert response.status_code == 200, response.text
    length = int(response.headers["inference-header-content-length"])
    (output,) = httpx.Response(200, content=response.content[:length]).json()["outputs"]
    assert output["shape"] == [1, 4 * 2**20]
    assert output["parameters"] == {"binary_data_size": len(blob)}
    assert response.content[length:] == blob


@pytest.mark.parametrize(
    ("declared", "blob", "header_length", "fragment"),
    [
        (12, b"\0" * 10, None, "only 10 remain"),
        (8, b"\0" * 8, None, "needs 12"),
        (12, b"\0" * 14, None, "2 bytes of binary data no input claims"),
        (12, b"\0" * 12, "abc", "must be an integer"),
        (12, b"\0" * 12, "100000", "does not fit"),
    ],
)
def test_binary_sizes_must_add_up(
    models: httpx.Client, declared: int, blob: bytes, header_length: str | None, fragment: str
) -> None:
    header = {
        "inputs": [
            {"name": "x", "shape": [3], "datatype": "FP32", "parameters": {"binary_data_size": declared}}
        ]
    }
    head = httpx.Request("POST", "/", json=header).content
    response = models.post(
        "/v2/models/echo/infer",
        content=head + blob,
        headers={"Inference-Header-Content-Length": header_length or str(len(head))},
    )
    assert response.status_code == 400
    assert fragment in response.json()["error"]


def test_gzip_request_bodies_are_accepted(client: httpx.Client) -> None:
    body = gzip.compress(httpx.Request("POST", "/", json=iris_request(IRIS_ROWS)).content)
    response = client.post("/v2/models/iris/infer", content=body, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200
    broken = client.post("/v2/models/iris/infer", content=b"nope", headers={"Content-Encoding": "gzip"})
    assert broken.status_code == 400
    assert "gzip" in broken.json()["error"]


def test_model_failure_is_a_generic_500_with_the_traceback_in_the_log(
    models: httpx.Client, models_server: RunningServer
) -> None:
    request = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]}
    response = models.post("/v2/models/failing/infer", json=request, headers={"X-Request-ID": "trace-me"})
    assert response.status_code == 500
    assert response.json() == {"error": "model 'failing' failed to run the request; see the server log"}
    assert "secret" not in response.text
    assert response.headers["x-request-id"] == "trace-me"
    assert models.post("/v2/models/echo/infer", json=request).status_code == 200

    def logged() -> bool:
        lines = [line for line in models_server.stderr_lines if "trace-me" in line]
        return any("secret internal detail" in line and "Traceback" in line for line in lines)

    deadline = time.monotonic() + 10  # the log reaches us through a reader thread
    while not logged() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert logged()


def test_tritonclient_http_json_and_binary(triton_iris: triton.InferenceServerClient) -> None:
    assert triton_iris.is_server_live()
    assert triton_iris.is_server_ready()
    assert triton_iris.is_model_ready("iris")
    assert not triton_iris.is_model_ready("nope")
    assert triton_iris.get_server_metadata()["name"] == "inferd"
    assert triton_iris.get_model_metadata("iris")["inputs"][0]["datatype"] == "FP32"
    features = np.array(IRIS_ROWS, dtype=np.float32)
    for binary in (True, False):
        tensor = triton.InferInput("input-0", list(features.shape), "FP32")
        tensor.set_data_from_numpy(features, binary_data=binary)
        result = triton_iris.infer("iris", [tensor], request_id="abc")
        assert result.get_response()["id"] == "abc"
        assert result.as_numpy("label").tolist() == [0, 2]
        outputs = [triton.InferRequestedOutput("probabilities", binary_data=binary)]
        selected = triton_iris.infer("iris", [tensor], outputs=outputs)
        assert selected.as_numpy("probabilities").shape == (2, 3)
        assert selected.as_numpy("label") is None


def test_tritonclient_http_bytes(models_server: RunningServer) -> None:
    client = triton.InferenceServerClient(models_server.http_address)
    text = np.array([b"hello", b"w\x00rld"], dtype=object)
    tensor = triton.InferInput("text", [2], "BYTES")
    tensor.set_data_from_numpy(text, binary_data=True)
    result = client.infer("upper", [tensor])
    assert result.as_numpy("upper").tolist() == [b"HELLO", b"W\x00RLD"]
    assert result.as_numpy("raw").tolist() == [b"\xff\xfe"]
    client.close()


def test_tritonclient_http_reports_errors(triton_iris: triton.InferenceServerClient) -> None:
    tensor = triton.InferInput("input-0", [1, 3], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 3), dtype=np.float32))
    with pytest.raises(InferenceServerException, match=r"expects \[-1, 4\]"):
        triton_iris.infer("iris", [tensor])
    with pytest.raises(InferenceServerException, match="not served here"):
        triton_iris.get_model_metadata("nope")


def test_model_repository_extension(models_server: RunningServer, models: httpx.Client) -> None:
    client = triton.InferenceServerClient(models_server.http_address)
    index = {entry["name"]: entry for entry in client.get_model_repository_index()}
    assert index["pid"]["state"] == "READY"
    request = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]}
    client.unload_model("pid")
    try:
        assert not client.is_model_ready("pid")
        assert models.get("/v2/models/pid/ready").status_code == 400
        refused = models.post("/v2/models/pid/infer", json=request)
        assert refused.status_code == 503
        assert "not ready" in refused.json()["error"]
        states = {
            entry["name"]: entry["state"] for entry in models.post("/v2/repository/index", json={}).json()
        }
        assert states["pid"] == "UNAVAILABLE"
        ready_only = models.post("/v2/repository/index", json={"ready": True}).json()
        assert "pid" not in {entry["name"] for entry in ready_only}
        assert models.get("/v2/health/ready").status_code == 400
    finally:
        client.load_model("pid")
    assert client.is_model_ready("pid")
    assert models.post("/v2/models/pid/infer", json=request).status_code == 200
    missing = models.post("/v2/repository/models/nope/load")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    client.close()


def test_metrics_count_requests_per_model_and_protocol(client: httpx.Client) -> None:
    def count() -> float:
        text = client.get("/metrics").text
        for line in text.splitlines():
            if line.startswith('inferd_requests_total{model="iris",outcome="ok",protocol="rest"}'):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = count()
    for _ in range(3):
        client.post("/v2/models/iris/infer", json=iris_request(IRIS_ROWS))
    assert count() == before + 3
    text = client.get("/metrics").text
    assert 'inferd_request_duration_seconds_bucket{le="0.001",model="iris",protocol="rest"}' in text
    assert 'inferd_requests_in_flight{model="iris",protocol="rest"}' in text


def test_numbers_written_as_strings_are_not_numbers(client: httpx.Client) -> None:
    response = client.post("/v2/models/iris/infer", json=iris_request([["5.1", "3.5", "1.4", "0.2"]] * 2))
    assert response.status_code == 400
    assert "strings" in response.json()["error"]


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        ({"config": "{not json"}, "parameters.config is not JSON"),
        ({"config": "[1, 2]"}, "must be a JSON object"),
        ({"config": 7}, "must be a JSON text"),
        ({"config": "{}", "file:1/model.py": "@@ not base64 @@"}, "'file:1/model.py' is not valid base64"),
        ({"config": "{}", "file:1/model.py": "cHJpbnQoKQ=="}, "no model repository"),
    ],
)
def test_a_load_with_config_or_files_is_checked(
    models: httpx.Client, parameters: dict[str, Any], problem: str
) -> None:
    refused = models.post("/v2/repository/models/pid/load", json={"parameters": parameters})
    assert refused.status_code == 400
    assert problem in refused.json()["error"]
    assert models.get("/v2/models/pid/ready").status_code == 200
