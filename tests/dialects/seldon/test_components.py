"""Every component method over real HTTP: transformers, routers, combiners, feedback, raw methods,
tags and metrics merging, parameters, metadata, health and errors."""

from __future__ import annotations

import grpc
import httpx
import pytest
from google.protobuf import json_format

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from tests.dialects.seldon.conftest import COMPONENTS
from tests.servers import RunningServer, client_of, serve, served

NDARRAY = {"data": {"ndarray": [[1, 2]]}}
STATIC_METRICS = [
    {"key": "everything_calls", "tags": {"kind": "test"}, "type": "COUNTER", "value": 1},
    {"key": "everything_gauge", "type": "GAUGE", "value": 42},
    {"key": "everything_timer", "type": "TIMER", "value": 20.2},
]
REQUEST_PATH = {"classifier": "seldonio/everything:0.3"}


def test_parameters_reach_the_constructor_with_their_types(everything: httpx.Client) -> None:
    config = everything.post("/predict", json={"strData": "config"}).json()["jsonData"]
    assert config["factor"] == 3 and config["label"] == "hello"
    assert config["enabled"] is True and config["ratio"] == 0.5
    assert config["types"] == ["int", "str", "bool", "float"]
    assert config["loads"] == 1


def test_predict_merges_request_meta_tags_and_metrics(everything: httpx.Client) -> None:
    request = {
        "data": {"names": ["a", "b"], "ndarray": [[1, 2]]},
        "meta": {
            "puid": "p1",
            "tags": {"in": "t", "shared": "request"},
            "metrics": [{"key": "m", "value": 1}],
        },
    }
    body = everything.post("/api/v1.0/predictions", json=request).json()
    assert body["data"] == {"names": ["left", "right"], "ndarray": [[3, 6]]}
    assert body["meta"]["puid"] == "p1"
    assert body["meta"]["tags"] == {"in": "t", "shared": "static", "static": 1}
    assert body["meta"]["metrics"] == [{"key": "m", "value": 1}, *STATIC_METRICS]
    assert body["meta"]["requestPath"] == REQUEST_PATH


def test_meta_reaches_predict(everything: httpx.Client) -> None:
    meta = {"puid": "abc", "tags": {"t": 1}}
    body = everything.post("/predict", json={"strData": "meta", "meta": meta}).json()
    assert body["jsonData"] == {"meta": meta}


def test_seldon_response_runtime_tags_and_metrics_win(everything: httpx.Client) -> None:
    body = everything.post(
        "/predict", json={"data": {"ndarray": [[7, 7]]}, "meta": {"tags": {"in": "t"}}}
    ).json()
    assert body["data"]["ndarray"] == [[7, 7]]
    assert body["meta"]["tags"] == {"in": "t", "rt": "yes", "shared": "runtime", "static": 1}
    assert body["meta"]["metrics"] == [*STATIC_METRICS, {"key": "runtime_gauge", "type": "GAUGE", "value": 7}]


def test_transformers(everything: httpx.Client) -> None:
    tensor = {"data": {"tensor": {"shape": [1, 2], "values": [1, 2]}}, "meta": {"tags": {"in": 1}}}
    transformed = everything.post("/transform-input", json=tensor).json()
    assert transformed["data"] == {"names": ["left", "right"], "tensor": {"shape": [1, 2], "values": [2, 4]}}
    assert transformed["meta"]["tags"]["in"] == 1
    output = everything.post("/transform-output", json=NDARRAY).json()
    assert output["data"] == {"names": ["left", "right"], "ndarray": [[2, 3]]}


def test_route_answers_the_child_index(everything: httpx.Client) -> None:
    body = everything.post(
        "/route", json={"data": {"ndarray": [[1, 9]]}, "meta": {"puid": "r1", "tags": {"x": 1}}}
    )
    assert body.json()["data"] == {"names": ["left", "right"], "ndarray": [[1]]}
    assert body.json()["meta"]["puid"] == "r1"
    assert "x" not in body.json()["meta"]["tags"]  # the answer carries no request tags
    tensor = everything.post("/route", json={"data": {"tensor": {"shape": [1], "values": [-1]}}}).json()
    assert tensor["data"]["tensor"] == {"shape": [1, 1], "values": [-1]}


def test_routers_see_the_request_meta(everything_server: RunningServer, raw: httpx.Client) -> None:
    """``route(X, names, meta=...)``, ``route(X, names, **kwargs)`` and ``route_raw`` get the request's
    meta (seldon-core passes it to routers as to predict), over REST and gRPC."""
    request = {"data": {"ndarray": [[1, 9]]}, "meta": {"puid": "r2", "tags": {"route": 0}}}
    answer = httpx.post(f"{everything_server.http_url}/route", json=request).json()
    assert answer["data"]["ndarray"] == [[0]] and "route" not in answer["meta"]["tags"]
    assert everything_server.grpc_address is not None
    with grpc.insecure_channel(everything_server.grpc_address) as channel:
        reply = pb_grpc.RouterStub(channel).Route(json_format.ParseDict(request, pb.SeldonMessage()))
    assert json_format.MessageToDict(reply)["data"]["ndarray"] == [[0.0]]
    assert raw.post("/route", json=request).json() == {"data": {"ndarray": [[0]]}}
    with serve("Router", "--dialect", "seldon", cwd=COMPONENTS) as server:
        kwargs = httpx.post(f"{server.http_url}/route", json=request).json()
        assert kwargs["data"]["ndarray"] == [[0]]
        assert httpx.post(f"{server.http_url}/route", json=NDARRAY).json()["data"]["ndarray"] == [[-1]]


def test_route_out_of_range_is_bad_data(everything: httpx.Client) -> None:
    response = everything.post("/route", json={"data": {"ndarray": [[-5]]}})
    assert response.status_code == 400
    assert "out of range" in response.json()["status"]["info"]


def test_aggregate_takes_a_list_or_seldon_messages(everything: httpx.Client) -> None:
    first = {"data": {"ndarray": [[1, 2]]}, "meta": {"puid": "first", "tags": {"a": 1, "b": 1}}}
    second = {"data": {"ndarray": [[10, 20]]}, "meta": {"puid": "second", "tags": {"b": 2}}}
    for body in ([first, second], {"seldonMessages": [first, second]}):
        answer = everything.post("/aggregate", json=body).json()
        assert answer["data"] == {"names": ["left", "right"], "ndarray": [[11, 22]]}
        assert answer["meta"]["puid"] == "first"
        assert answer["meta"]["tags"] == {"a": 1, "b": 2, "shared": "static", "static": 1}


@pytest.mark.parametrize("body", [{"seldonMessages": {"not": "a list"}}, {"wrong": []}, [{"nodata": 1}], []])
def test_aggregate_bad_input(everything: httpx.Client, body: object) -> None:
    response = everything.post("/aggregate", json=body)
    assert response.status_code == 400
    assert response.json()["status"]["reason"] == "MICROSERVICE_BAD_DATA"


def test_feedback_reaches_send_feedback_with_routing(everything: httpx.Client) -> None:
    feedback = {
        "request": {"data": {"ndarray": [[1, 2]]}, "meta": {"puid": "fb"}},
        "response": {"meta": {"routing": {"classifier": 1}}},
        "reward": 0.5,
        "truth": {"data": {"ndarray": [[1]]}},
    }
    body = everything.post("/api/v1.0/feedback", json=feedback).json()
    # The proto path: numbers become doubles, empty names are dropped.
    assert body["meta"]["puid"] == "fb"
    assert body["meta"]["tags"] == {"shared": "static", "static": 1.0}
    assert body["data"] == {"ndarray": []}
    metrics = everything.get("/prometheus").text
    assert "seldon_api_model_feedback_reward_total{" in metrics


def test_health_status_and_metadata(everything: httpx.Client) -> None:
    health = everything.get("/health/status").json()
    assert health["data"] == {"names": [], "tensor": {"shape": [2], "values": [1, 2]}}
    assert health["meta"]["tags"] == {"shared": "static", "static": 1}
    metadata = everything.get("/metadata").json()
    assert metadata["name"] == "everything"
    assert metadata["versions"] == ["everything/v1"]
    assert metadata["outputs"] == [{"name": "out", "datatype": "FP64", "shape": [1, 2]}]
    assert metadata["custom"] == {"owner": "tests"}


def test_seldon_exception_keeps_status_and_reason(everything: httpx.Client) -> None:
    response = everything.post("/predict", json={"data": {"ndarray": [[0]]}})
    assert response.status_code == 403
    assert response.json() == {"status": {"code": -1, "info": "nope", "reason": "MY_REASON", "status": 1}}


def test_other_exceptions_are_500_internal_error(
    everything: httpx.Client, everything_server: RunningServer
) -> None:
    response = everything.post("/predict", json={"data": {"ndarray": [[-1]]}})
    assert response.status_code == 500
    assert response.json()["status"] == {
        "code": -1,
        "info": "negative one is not allowed",
        "reason": "MICROSERVICE_INTERNAL_ERROR",
        "status": 1,
    }
    assert "Traceback" in everything_server.wait_for_log("negative one is not allowed")
    assert everything.post("/predict", json=NDARRAY).status_code == 200


def test_unknown_payload_type_returned_is_400() -> None:
    with (
        serve("Identity", "--dialect", "seldon", cwd=COMPONENTS) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        # A float from the request as jsonData comes back as jsonData; a bare number is not a payload.
        response = http.post("/predict", json={"jsonData": 3.5})
        assert response.status_code == 400
        assert "Unknown data type returned as payload" in response.json()["status"]["info"]


def test_raw_methods_answer_verbatim(raw: httpx.Client) -> None:
    answer = raw.post("/predict", json={"jsonData": {"x": 1}})
    assert answer.json() == {
        "jsonData": {"raw": {"x": 1}},
        "meta": {"metrics": [{"key": "raw_counter", "type": "COUNTER", "value": 2}]},
    }
    created = raw.post("/predict", json={"strData": "created"})
    assert created.status_code == 201
    assert created.json() == {"jsonData": {"made": True}, "status": {"code": 201}}
    assert "raw_counter_total{" in raw.get("/metrics").text


def test_raw_stub_falls_through_to_the_high_level_method(raw: httpx.Client) -> None:
    body = raw.post("/transform-input", json={"data": {"ndarray": [[1, 2]]}}).json()
    assert body["data"]["ndarray"] == [[10, 20]]


def test_raw_feedback_gets_the_feedback_message(raw: httpx.Client) -> None:
    feedback = {"request": {"meta": {"puid": "p9"}, "strData": "x"}, "reward": 0.5}
    assert raw.post("/send-feedback", json=feedback).json() == {"jsonData": {"reward": 0.5, "puid": "p9"}}


def test_raw_route_aggregate_and_health(raw: httpx.Client) -> None:
    assert raw.post("/route", json=NDARRAY).json() == {"data": {"ndarray": [[1]]}}
    assert raw.post("/aggregate", json=[NDARRAY, NDARRAY]).json() == {"jsonData": {"count": 2}}
    assert raw.get("/health/status").json() == {"jsonData": {"raw": "health"}}


stubbed_server = served(lambda: serve("Stubbed", "--dialect", "seldon", cwd=COMPONENTS), scope="module")
stubbed = client_of("stubbed_server")


def test_seldon_component_stubs_count_as_absent(stubbed: httpx.Client) -> None:
    assert stubbed.get("/health/status").json() == {
        "meta": {},
        "strData": "not implemented - assuming healthy",
    }
    assert stubbed.post("/predict", json=NDARRAY).json() == {
        "data": {"names": ["t:0", "t:1"], "ndarray": [["a", 1]]},
        "meta": {},
    }
    route = stubbed.post("/route", json=NDARRAY)
    assert route.status_code == 400 and route.json()["status"]["info"] == "Route not defined"
    assert stubbed.post("/transform-input", json=NDARRAY).json()["data"]["ndarray"] == [[1, 2]]


def test_model_error_handler_blueprint_answers_its_exception() -> None:
    with (
        serve("FlaskErrors", "--dialect", "seldon", cwd=COMPONENTS) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        handled = http.post("/predict", json={"data": {"ndarray": [1]}})
        assert handled.status_code == 402
        assert handled.headers["x-handled-by"] == "blueprint"
        assert handled.json() == {"status": {"status": 402, "message": "custom failure", "app_code": 1402}}
        other = http.post("/predict", json={"data": {"ndarray": [2]}})
        assert other.status_code == 500
        assert other.json()["status"]["reason"] == "MICROSERVICE_INTERNAL_ERROR"
        assert http.post("/predict", json={"data": {"ndarray": [3]}}).status_code == 200


def test_invalid_metadata_is_500_and_predict_still_works() -> None:
    with (
        serve("BadMetadata", "--dialect", "seldon", cwd=COMPONENTS) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        for path in ("/metadata", "/api/v1.0/metadata"):
            response = http.get(path)
            assert response.status_code == 500
            assert response.json() == {
                "status": {
                    "code": -1,
                    "info": "Model metadata unavailable",
                    "reason": "MICROSERVICE_BAD_METADATA",
                    "status": 1,
                }
            }
        assert http.post("/predict", json=NDARRAY).status_code == 200


def test_model_metadata_variable_wins_per_key() -> None:
    env = {
        "MODEL_METADATA": "name: from-env\nplatform: yaml-platform\n",
        "PREDICTIVE_UNIT_IMAGE": "org/img:1.2",
    }
    with (
        serve("Identity", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        assert http.get("/metadata").json() == {
            "custom": {},
            "inputs": [],
            "name": "from-env",
            "outputs": [],
            "platform": "yaml-platform",
            "versions": ["1.2"],
        }


def test_model_metadata_variable_that_does_not_parse_is_500() -> None:
    env = {"MODEL_METADATA": "{not: [valid"}
    with serve("Identity", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        with httpx.Client(base_url=server.http_url) as http:
            response = http.get("/metadata")
            assert response.status_code == 500
            assert response.json()["status"]["reason"] == "MICROSERVICE_BAD_METADATA"
            assert http.post("/predict", json=NDARRAY).status_code == 200


def test_metrics_can_be_left_out_of_client_responses() -> None:
    env = {"INCLUDE_METRICS_IN_CLIENT_RESPONSE": "false"}
    with (
        serve("Everything", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        request = {"data": {"ndarray": [[7, 7]]}, "meta": {"metrics": [{"key": "m", "value": 1}]}}
        body = http.post("/predict", json=request).json()
        assert body["meta"]["metrics"] == [{"key": "m", "value": 1}]  # the request's own are still echoed
        assert "runtime_gauge{" in http.get("/metrics").text  # and Prometheus still records the rest


def test_payload_passthrough_hands_the_body_to_predict_raw() -> None:
    with serve("Raw", "--dialect", "seldon", env={"PAYLOAD_PASSTHROUGH": "true"}, cwd=COMPONENTS) as server:
        with httpx.Client(base_url=server.http_url) as http:
            response = http.post("/predict", content=b"not even json", headers={"content-type": "text/plain"})
            assert response.status_code == 200
            assert response.content == b"nosj neve ton"
            assert response.headers["content-type"] == "application/json"
            accepted = http.post("/predict", content=b"accepted", headers={"content-type": "text/plain"})
            assert accepted.status_code == 202 and accepted.json() == {"status": {"code": 202}}
            # Only predict passes through; the other routes still decode.
            assert http.post("/transform-input", json=NDARRAY).json()["data"]["ndarray"] == [[10, 20]]


def test_legacy_rest_and_grpc_methods_come_first(legacy_server: RunningServer) -> None:
    server = legacy_server
    body = httpx.post(f"{server.http_url}/predict", json={"strData": "x"}).json()
    assert body == {"jsonData": {"legacy": "rest", "got": {"strData": "x"}}}
    assert server.grpc_address is not None
    with grpc.insecure_channel(server.grpc_address) as channel:
        reply = pb_grpc.ModelStub(channel).Predict(pb.SeldonMessage(strData="y"))
    assert json_format.MessageToDict(reply) == {"strData": "grpc:y"}
    assert "predict_rest is deprecated" in server.wait_for_log("predict_rest is deprecated")


def test_legacy_predict_answer_status_code_is_the_http_status(legacy_server: RunningServer) -> None:
    answer = httpx.post(f"{legacy_server.http_url}/api/v1.0/predictions", json={"strData": "accepted"})
    assert answer.status_code == 202
    assert answer.json() == {"status": {"code": 202, "info": "queued"}, "strData": "later"}


def test_request_path_names_the_unit_as_seldon_core_fills_it() -> None:
    """``PREDICTIVE_UNIT_IMAGE`` unset: the unit's image is ``NOT_IMPLEMENTED:NOT_IMPLEMENTED``; the
    request's own requestPath entries win over the unit's."""
    with serve(
        "Identity", "--dialect", "seldon", env={"PREDICTIVE_UNIT_ID": "unit-a"}, cwd=COMPONENTS
    ) as server:
        with httpx.Client(base_url=server.http_url) as http:
            body = http.post("/predict", json=NDARRAY).json()
            assert body["meta"]["requestPath"] == {"unit-a": "NOT_IMPLEMENTED:NOT_IMPLEMENTED"}
            path = {"unit-a": "from-request", "before": "img:1"}
            request = {**NDARRAY, "meta": {"requestPath": path}}
            assert http.post("/predict", json=request).json()["meta"]["requestPath"] == path
            assert http.get("/metadata").json()["name"] == ""  # metadata reads an unset image as ""
