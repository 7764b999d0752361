"""SeldonMessage payloads and request forms over real HTTP, against the spec's identity examples."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.servers import RunningServer

PREDICT = "/api/v1.0/predictions"

IDENTITY_EXAMPLES = [
    ({"data": {"ndarray": [[1, 2]]}}, {"data": {"names": ["t:0", "t:1"], "ndarray": [[1, 2]]}, "meta": {}}),
    (
        {"data": {"names": ["a", "b"], "ndarray": [[1.5, 2]]}, "meta": {"puid": "p1", "tags": {"x": 1}}},
        {
            "data": {"names": ["t:0", "t:1"], "ndarray": [[1.5, 2.0]]},
            "meta": {"puid": "p1", "tags": {"x": 1}},
        },
    ),
    (
        {"data": {"tensor": {"shape": [1, 2], "values": [1, 2]}}},
        {"data": {"names": ["t:0", "t:1"], "tensor": {"shape": [1, 2], "values": [1, 2]}}, "meta": {}},
    ),
    ({"data": {"ndarray": [1, 2]}}, {"data": {"names": [], "ndarray": [1, 2]}, "meta": {}}),
    ({"strData": "hello"}, {"meta": {}, "strData": "hello"}),
    ({"binData": "MTIz"}, {"binData": "MTIz", "meta": {}}),
    ({"jsonData": {"a": [1, 2]}}, {"jsonData": {"a": [1, 2]}, "meta": {}}),
    (
        {"data": {"ndarray": [[True, False]]}},
        {"data": {"names": ["t:0", "t:1"], "ndarray": [[True, False]]}, "meta": {}},
    ),
    ({"data": {}}, {"data": {"names": [], "ndarray": []}, "meta": {}}),
    (
        {"data": {"ndarray": [["a", 1]]}},
        {"data": {"names": ["t:0", "t:1"], "ndarray": [["a", "1"]]}, "meta": {}},
    ),
    (
        {"data": {"ndarray": [[1, 2.5]]}},
        {"data": {"names": ["t:0", "t:1"], "ndarray": [[1.0, 2.5]]}, "meta": {}},
    ),
    (
        {"data": {"ndarray": [12345678901234567890]}},
        {"data": {"names": [], "ndarray": [12345678901234567890]}, "meta": {}},
    ),
    (
        {"data": {"ndarray": [[1, 2]]}, "strData": "ignored"},
        {"data": {"names": ["t:0", "t:1"], "ndarray": [[1, 2]]}, "meta": {}},
    ),
    (
        {"data": {"ndarray": [[1, 2]]}, "meta": {"routing": {"r": 1}}},
        {"data": {"names": ["t:0", "t:1"], "ndarray": [[1, 2]]}, "meta": {}},
    ),
]


@pytest.mark.parametrize(("request_body", "expected"), IDENTITY_EXAMPLES)
def test_identity_examples_of_the_spec(identity: httpx.Client, request_body: dict, expected: dict) -> None:
    response = identity.post(PREDICT, json=request_body)
    assert response.status_code == 200, response.text
    assert response.json() == expected
    assert response.headers["access-control-allow-origin"] == "*"


def test_keys_are_sorted_and_integers_stay_integers(identity: httpx.Client) -> None:
    response = identity.post("/predict", json={"data": {"ndarray": [[1, 2]]}})
    assert response.content == b'{"data":{"names":["t:0","t:1"],"ndarray":[[1,2]]},"meta":{}}'


def test_tftensor_round_trip(identity: httpx.Client) -> None:
    tensor = {
        "dtype": "DT_FLOAT",
        "tensorShape": {"dim": [{"size": "1"}, {"size": "2"}]},
        "floatVal": [1.5, 2],
    }
    body = identity.post(PREDICT, json={"data": {"tftensor": tensor}}).json()
    answer = body["data"]["tftensor"]
    assert body["data"]["names"] == ["t:0", "t:1"]
    assert answer["dtype"] == "DT_FLOAT"
    assert answer["tensorShape"] == {"dim": [{"size": "1"}, {"size": "2"}]}
    # TensorFlow's make_tensor_proto writes the values as little-endian float32 tensor_content.
    import base64

    import numpy as np

    values = np.frombuffer(base64.b64decode(answer["tensorContent"]), dtype="<f4")
    assert values.tolist() == [1.5, 2.0]


def test_one_tftensor_value_repeats_over_its_shape_within_a_limit(
    identity_server: RunningServer, identity: httpx.Client
) -> None:
    """TensorFlow sends a constant tensor as one value and a shape; a shape of 2**31 doubles (16 GiB)
    is refused before anything is allocated, and the server keeps serving."""
    import base64

    import numpy as np

    huge = {"dtype": "DT_DOUBLE", "tensorShape": {"dim": [{"size": str(2**31)}]}, "doubleVal": [1.0]}
    before, started = identity_server.peak_memory(), time.monotonic()
    response = identity.post(PREDICT, json={"data": {"tftensor": huge}})
    took, grown = time.monotonic() - started, identity_server.peak_memory() - before
    assert response.status_code == 400
    assert response.json()["status"]["info"] == (
        "Invalid tftensor: one value repeated over shape [2147483648] would take 17179869184 bytes, "
        "more than the limit of 67108864"
    )
    assert took < 3.0 and grown < 200 * 2**20
    small = {"dtype": "DT_DOUBLE", "tensorShape": {"dim": [{"size": "2"}, {"size": "3"}]}, "doubleVal": [1.5]}
    answer = identity.post(PREDICT, json={"data": {"tftensor": small}}).json()["data"]["tftensor"]
    assert np.frombuffer(base64.b64decode(answer["tensorContent"]), dtype="<f8").tolist() == [1.5] * 6


@pytest.mark.parametrize("path", ["/predict", "/api/v1.0/predictions", "/api/v0.1/predictions"])
def test_form_field_json(identity: httpx.Client, path: str) -> None:
    response = identity.post(path, data={"json": json.dumps({"data": {"ndarray": [[3]]}})})
    assert response.json() == {"data": {"names": ["t:0"], "ndarray": [[3]]}, "meta": {}}


def test_query_parameter_json(identity: httpx.Client) -> None:
    response = identity.get("/predict", params={"json": json.dumps({"strData": "from the query"})})
    assert response.json() == {"meta": {}, "strData": "from the query"}


def test_multipart_parts(identity: httpx.Client) -> None:
    response = identity.post(
        "/predict", files={"data": (None, '{"ndarray":[[1,2]]}'), "meta": (None, '{"puid":"x"}')}
    )
    assert response.json() == {"data": {"names": ["t:0", "t:1"], "ndarray": [[1, 2]]}, "meta": {"puid": "x"}}


def test_multipart_bin_data_file_is_base64(identity: httpx.Client) -> None:
    response = identity.post("/predict", files={"binData": ("blob.bin", b"abc", "application/octet-stream")})
    assert response.json() == {"binData": "YWJj", "meta": {}}


def test_multipart_str_data_is_plain_text(identity: httpx.Client) -> None:
    response = identity.post("/predict", files={"strData": (None, "not json {")})
    assert response.json() == {"meta": {}, "strData": "not json {"}


BAD_INPUT = [
    ({"nothing": 1}, "Invalid request data type"),
    ({"data": {"ndarray": [[1, 2], [3]]}}, "Invalid ndarray"),
    ({"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3]}}}, "do not fill shape [2, 2]"),
    ({"binData": "%%%not base64"}, "Invalid base64 in binData"),
    ([1, 2], "Invalid request data type"),
    ({"data": {"tftensor": {"dtype": "DT_FLOAT", "noSuchField": 1}}}, "Invalid tftensor"),
    ({"data": {"ndarray": [1]}, "meta": "not an object"}, "Invalid meta: expected an object"),
    ({"strData": "x", "meta": {"tags": ["a"]}}, "Invalid meta: 'tags' must be a JSON object"),
    ({"strData": "x", "meta": {"metrics": {"k": 1}}}, "Invalid meta: 'metrics' must be a JSON list"),
    ({"data": "not an object"}, "'data' must be an object"),
    ({"data": {"tensor": [1, 2]}}, "Invalid tensor"),
]


@pytest.mark.parametrize(("request_body", "info"), BAD_INPUT)
def test_bad_input_is_400_with_the_seldon_body(
    identity: httpx.Client, request_body: object, info: str
) -> None:
    response = identity.post(PREDICT, json=request_body)
    assert response.status_code == 400
    status = response.json()["status"]
    assert status["code"] == -1 and status["status"] == 1
    assert status["reason"] == "MICROSERVICE_BAD_DATA"
    assert info in status["info"]
    assert identity.post(PREDICT, json={"strData": "still serving"}).status_code == 200


@pytest.mark.parametrize(
    ("kwargs", "info"),
    [
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, "Invalid JSON"),
        ({"data": {"json": "{not json"}}, "Invalid JSON"),
        (
            {"content": b'{"strData":"x"}', "headers": {"content-type": "text/plain"}},
            "Can't find JSON in data",
        ),
        ({"content": b"", "headers": {"content-type": "application/json"}}, "Can't find JSON in data"),
        ({"files": {"strData": (None, "x"), "meta": (None, "{not json")}}, "Invalid JSON"),
        (
            {"content": b"--nope\r\nbroken", "headers": {"content-type": "multipart/form-data; boundary=b"}},
            "",
        ),
    ],
)
def test_undecodable_bodies_are_400(identity: httpx.Client, kwargs: dict, info: str) -> None:
    response = identity.post("/predict", **kwargs)
    assert response.status_code == 400, response.text
    assert response.json()["status"]["reason"] == "MICROSERVICE_BAD_DATA"
    assert info in response.json()["status"]["info"]


def test_unknown_path_and_wrong_method_get_real_statuses(identity: httpx.Client) -> None:
    missing = identity.get("/nonexistent")
    assert missing.status_code == 404
    assert missing.json()["status"]["info"].startswith("404 Not Found:")
    assert missing.json()["status"]["reason"] == "MICROSERVICE_INTERNAL_ERROR"
    wrong = identity.get(PREDICT)
    assert wrong.status_code == 405
    assert wrong.json()["status"]["info"].startswith("405 Method Not Allowed:")
    assert identity.post("/metrics").status_code == 405


def test_cors_preflight(identity: httpx.Client) -> None:
    response = identity.options(
        PREDICT, headers={"Origin": "http://example.test", "Access-Control-Request-Headers": "content-type"}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert response.headers["access-control-allow-headers"] == "content-type"


def test_health_ping_status_metadata_and_openapi(identity: httpx.Client) -> None:
    ping = identity.get("/health/ping")
    assert (ping.status_code, ping.text) == (200, "pong")
    assert ping.headers["content-type"].startswith("text/html")
    for path in ("/health/status", "/api/v1.0/health/status"):
        assert identity.get(path).json() == {"meta": {}, "strData": "healthy"}
    trivial = {"custom": {}, "inputs": [], "name": "", "outputs": [], "platform": "", "versions": [""]}
    assert identity.get("/metadata").json() == trivial
    assert identity.get("/api/v1.0/metadata").json() == trivial
    document = identity.get("/seldon.json").json()
    assert document["openapi"] == "3.0.0"
    assert set(document["paths"]) == {
        "/predict",
        "/send-feedback",
        "/transform-input",
        "/transform-output",
        "/route",
        "/aggregate",
    }


def test_missing_methods_answer_as_seldon(identity: httpx.Client) -> None:
    message = {"data": {"ndarray": [[1, 2]]}}
    assert identity.post("/transform-input", json=message).json() == {
        "data": {"names": ["t:0", "t:1"], "ndarray": [[1, 2]]},
        "meta": {},
    }
    assert identity.post("/transform-output", json={"strData": "same"}).json() == {
        "meta": {},
        "strData": "same",
    }
    route = identity.post("/route", json=message)
    assert route.status_code == 400 and route.json()["status"]["info"] == "Route not defined"
    aggregate = identity.post("/aggregate", json=[message, message])
    assert aggregate.status_code == 400 and aggregate.json()["status"]["info"] == "Aggregate not defined"
    feedback = identity.post("/send-feedback", json={"request": {"data": {"ndarray": [[1]]}}, "reward": 1})
    assert feedback.json() == {"data": {"ndarray": []}, "meta": {}}
    empty = identity.post("/api/v1.0/feedback", json={"reward": 42})
    assert empty.json() == {"data": {"tensor": {"shape": [0]}}, "meta": {}}


def test_feedback_is_parsed_strictly(identity: httpx.Client) -> None:
    response = identity.post("/send-feedback", json={"reward": 1, "bogus": 2})
    assert response.status_code == 400
    assert (
        'Invalid JSON: Message type "seldon.protos.Feedback" has no field named "bogus"'
        in (response.json()["status"]["info"])
    )


def test_v2_ndarray_in_tensor_out(identity: httpx.Client) -> None:
    body = {"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
    response = identity.post("/v2/models/identity/infer", json=body)
    assert response.status_code == 200, response.text
    output = response.json()["outputs"][0]
    assert output["name"] == "output-0"
    assert output["shape"] == [2, 2]
    assert output["data"] == [1, 2, 3, 4]
    assert identity.get("/v2/models/identity").json()["platform"] == "seldon"
