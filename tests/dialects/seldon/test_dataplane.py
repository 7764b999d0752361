"""The Seldon routes on the data plane: the message routes are bare endpoints the server calls
directly; a call is counted ok or error by its answer's status, over REST and gRPC; an unknown or
unready model gets Seldon's error body and is not counted; a shed call says when to retry."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import pytest

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from inferd.server.routing import direct_routes
from tests.dialects.seldon.conftest import (
    COMPONENTS,
    PREDICTION_AND_FEEDBACK_PATHS,
    requests_total,
    served_requests_total,
    unloaded_app,
)
from tests.servers import RunningServer, serve, serve_asgi

MESSAGE_PATHS = (
    *PREDICTION_AND_FEEDBACK_PATHS,
    "/transform-input",
    "/transform-output",
    "/route",
    "/aggregate",
)


def test_message_routes_are_called_directly() -> None:
    app = unloaded_app("seldon", "direct", registered=True)
    assert set(MESSAGE_PATHS) <= set(direct_routes(app.router.fixed))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("registered", "status"), [(True, 503), (False, 404)])
def test_an_unready_or_unknown_model_gets_seldons_error_uncounted(registered: bool, status: int) -> None:
    name = f"absent-{registered}".lower()
    with serve_asgi(unloaded_app("seldon", name, registered)) as url:
        for path in ("/predict", "/api/v1.0/predictions"):
            answer = httpx.post(url + path, json={"data": {"ndarray": [1]}})
            assert answer.status_code == status
            assert answer.headers["access-control-allow-origin"] == "*"
            assert answer.json()["status"]["reason"] == "MICROSERVICE_INTERNAL_ERROR"
            assert f"model '{name}'" in answer.json()["status"]["info"]
        preflight = httpx.options(url + "/predict", headers={"Access-Control-Request-Headers": "x-a"})
        assert (preflight.status_code, preflight.headers["access-control-allow-headers"]) == (200, "x-a")
        assert httpx.put(url + "/predict").status_code == 405
    assert requests_total(name, "seldon", "error") == requests_total(name, "seldon", "ok") == 0


def served_total(server: RunningServer, protocol: str, outcome: str) -> float:
    return served_requests_total(server.http_url, "everything", protocol, outcome)


def test_rest_calls_count_by_their_answers_status(everything_server: RunningServer) -> None:
    before = {outcome: served_total(everything_server, "seldon", outcome) for outcome in ("ok", "error")}
    with everything_server.http() as http:
        assert http.post("/predict", json={"data": {"ndarray": [[1, 2]]}}).status_code == 200
        assert http.post("/api/v1.0/predictions", json={"strData": "x"}).status_code == 200
        bad_json = http.post("/predict", content=b"{", headers={"content-type": "application/json"})
        assert bad_json.status_code == 400
        assert http.post("/predict", json={"data": {"ndarray": [0]}}).status_code == 403  # the user's error
        assert http.options("/predict").status_code == 200  # a preflight is no call
    assert served_total(everything_server, "seldon", "ok") == before["ok"] + 2
    assert served_total(everything_server, "seldon", "error") == before["error"] + 2


def test_grpc_calls_are_counted(everything_server: RunningServer) -> None:
    before = {outcome: served_total(everything_server, "seldon-grpc", outcome) for outcome in ("ok", "error")}
    with everything_server.grpc_channel() as channel:
        model = pb_grpc.ModelStub(channel)
        model.Predict(pb.SeldonMessage(strData="x"))
        with pytest.raises(grpc.RpcError) as failed:
            model.Predict(pb.SeldonMessage(strData="bad metric"))
        assert failed.value.code() == grpc.StatusCode.INTERNAL
    assert served_total(everything_server, "seldon-grpc", "ok") == before["ok"] + 1
    assert served_total(everything_server, "seldon-grpc", "error") == before["error"] + 1


def test_a_shed_call_gets_seldons_body_and_retry_after() -> None:
    env = {"INFERD_MAX_CONCURRENCY": "1", "INFERD_MAX_QUEUE_SIZE": "1", "INFERD_PREDICT_IN_THREAD": "true"}
    with serve("Slow", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        with ThreadPoolExecutor(3) as pool:
            answers = list(
                pool.map(
                    lambda _: httpx.post(
                        f"{server.http_url}/predict", json={"data": {"ndarray": [1]}}, timeout=30
                    ),
                    range(3),
                )
            )
    shed = [answer for answer in answers if answer.status_code != 200]
    assert len(shed) == 1 and shed[0].status_code == 503
    assert shed[0].headers["retry-after"] == "1"
    assert shed[0].headers["access-control-allow-origin"] == "*"
    assert "busy" in shed[0].json()["status"]["info"]
