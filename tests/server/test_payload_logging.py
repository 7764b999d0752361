"""Payload logging against real servers: the iris example served with ``INFERD_PAYLOAD_LOG_*``, and
a CloudEvents sink on loopback (a Starlette app on uvicorn in a thread) recording what it gets."""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

import grpc
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.servers import ROOT, RunningServer, free_port, serve, serve_asgi

IRIS = str(ROOT / "examples" / "iris")
BODY = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [[5.1, 3.5, 1.4, 0.2]]}]}
).encode()
REQUEST_TYPE = "org.kubeflow.serving.inference.request"
RESPONSE_TYPE = "org.kubeflow.serving.inference.response"


@dataclass
class Sink:
    """What the sink received: each event's headers (lower-case names) and body."""

    url: str
    events: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.events)


@contextmanager
def sink(held: bool = False) -> Iterator[Sink]:
    """A CloudEvents sink on loopback answering 202; ``held``: holding every event unanswered (and
    unrecorded) until the block ends."""
    found = Sink("")
    if not held:
        found.released.set()

    async def receive(request: Request) -> Response:
        body = await request.body()
        while not found.released.is_set():
            await asyncio.sleep(0.01)
        found.events.append((dict(request.headers), body))
        return Response(status_code=202)

    with serve_asgi(Starlette(routes=[Route("/", receive, methods=["POST"])])) as url:
        found.url = url + "/"
        try:
            yield found
        finally:
            found.released.set()


@contextmanager
def logging_server(url: str, **variables: str) -> Iterator[RunningServer]:
    env = {"INFERD_PAYLOAD_LOG_URL": url, **{f"INFERD_{k.upper()}": v for k, v in variables.items()}}
    with serve(IRIS, env=env) as server:
        yield server


def infer(server: RunningServer, request_id: str) -> httpx.Response:
    with server.http() as http:
        answer = http.post(
            "/v2/models/iris/infer",
            content=BODY,
            headers={"content-type": "application/json", "x-request-id": request_id},
        )
    assert answer.status_code == 200, answer.text
    return answer


def by_id(events: list[tuple[dict[str, str], bytes]], id: str) -> dict[str, tuple[dict[str, str], bytes]]:
    return {headers["ce-type"]: (headers, body) for headers, body in events if headers["ce-id"] == id}


def check_attributes(headers: dict[str, str], kind: str, content_type: str) -> None:
    assert headers["ce-specversion"] == "1.0"
    assert headers["ce-type"] == kind
    assert re.fullmatch(r"http://[^/]+:\d+/", headers["ce-source"])
    assert headers["ce-time"].endswith("Z")
    assert (
        abs(datetime.fromisoformat(headers["ce-time"].replace("Z", "+00:00")).timestamp() - time.time()) < 60
    )
    assert headers["ce-inferenceservicename"] == "iris"
    assert headers["ce-namespace"] == "models-ns"
    assert headers["ce-component"] == "predictor"
    assert headers["ce-endpoint"] == ""
    assert headers["content-type"] == content_type


def test_rest_and_grpc_calls_are_sent_as_kserve_cloudevents() -> None:
    with sink() as received, logging_server(received.url, payload_log_namespace="models-ns") as server:
        answer = infer(server, "call-1")
        events = by_id(received.wait_for(2), "call-1")
        assert set(events) == {REQUEST_TYPE, RESPONSE_TYPE}
        request_headers, request_body = events[REQUEST_TYPE]
        check_attributes(request_headers, REQUEST_TYPE, "application/json")
        assert request_body == BODY  # as received, not encoded again
        response_headers, response_body = events[RESPONSE_TYPE]
        check_attributes(response_headers, RESPONSE_TYPE, "application/json")
        assert response_body == answer.content
        assert json.loads(response_body)["model_name"] == "iris"

        assert server.grpc_address is not None
        with grpc.insecure_channel(server.grpc_address) as channel:
            request = pb.ModelInferRequest(model_name="iris", id="grpc-1")
            tensor = request.inputs.add(name="input-0", datatype="FP32", shape=[1, 4])
            tensor.contents.fp32_contents.extend([5.1, 3.5, 1.4, 0.2])
            response = pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
        events = by_id(received.wait_for(4), "grpc-1")
        request_headers, request_body = events[REQUEST_TYPE]
        check_attributes(
            request_headers, REQUEST_TYPE, "application/x-protobuf; messageType=inference.ModelInferRequest"
        )
        assert pb.ModelInferRequest.FromString(request_body) == request
        response_headers, response_body = events[RESPONSE_TYPE]
        check_attributes(
            response_headers,
            RESPONSE_TYPE,
            "application/x-protobuf; messageType=inference.ModelInferResponse",
        )
        assert pb.ModelInferResponse.FromString(response_body) == response


@pytest.mark.parametrize(
    ("variables", "types"),
    [
        ({"payload_log_mode": "request"}, [REQUEST_TYPE]),
        ({"models__iris__payload_log_mode": "response"}, [RESPONSE_TYPE]),
        ({"models__iris__payload_log": "false"}, []),
        ({"payload_log_sample": "0"}, []),
    ],
    ids=["request-only", "model-response-only", "model-off", "sample-0"],
)
def test_what_is_logged(variables: dict[str, str], types: list[str]) -> None:
    with sink() as received, logging_server(received.url, **variables) as server:
        for index in range(3):
            infer(server, f"call-{index}")
        received.wait_for(3 * len(types), timeout=5.0)
        time.sleep(0.3)  # and nothing more comes
        assert sorted(h["ce-type"] for h, _ in received.events) == sorted(types * 3)


def metric(server: RunningServer, name: str) -> float:
    with server.http() as http:
        text = http.get("/metrics").text
    prefix = name if "{" in name else name + "{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def hammer(server: RunningServer, count: int = 200, threads: int = 8) -> list[float]:
    """``count`` requests from ``threads`` threads; each one's seconds (every one must succeed)."""

    def one(index: int) -> float:
        started = time.perf_counter()
        infer(server, f"load-{index}")
        return time.perf_counter() - started

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))


#: The sender's longest reconnect back-off to a dead sink (inferd/protocols/poster.py): requests that
#: waited for it would take about that long, most of them, once it has grown.
BACKOFF = 2.0
#: How long the held sink's events may wait for an answer (INFERD_PAYLOAD_LOG_TIMEOUT), and half of
#: it: a request that waited for the sink would take the whole of it. A bound, not a speed.
HELD_TIMEOUT = 60
WAITED = HELD_TIMEOUT / 2


def test_a_dead_sink_fails_no_request() -> None:
    dead = f"http://127.0.0.1:{free_port()}/"
    with logging_server(dead, payload_log_queue="10") as server:
        seconds = hammer(server)
        # the median, not the slowest: one request on a loaded machine may take as long as the back-off
        assert statistics.median(seconds) < BACKOFF / 2, "requests waited for the dead sink's back-off"
        deadline = time.monotonic() + 10
        while metric(server, "inferd_payload_log_failures_total") == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metric(server, "inferd_payload_log_failures_total") > 0


def test_a_slow_sink_slows_no_request_and_drops_are_counted() -> None:
    with (
        sink(held=True) as received,
        logging_server(received.url, payload_log_queue="10", payload_log_timeout=str(HELD_TIMEOUT)) as server,
    ):
        seconds = hammer(server)
        assert max(seconds) < WAITED, "a request waited for the slow sink's answer"
        assert not received.events  # every request was answered while the sink had answered none
        assert metric(server, "inferd_payload_log_dropped_total") > 0
        assert metric(server, 'inferd_payload_log_dropped_total{model="iris",reason="queue_full"') > 0
        assert "(queue_full)" in server.wait_for_log("event(s) dropped")
        received.released.set()  # before the server stops: it would wait for the held events
