"""What the property tests against reference libraries found (tests/fuzz/test_*_reference.py), sent
to a real server: each is answered as the reference library would have it, quickly, without the
server's memory growing, and the server keeps serving."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import numpy as np
import pytest
from cloudevents.core.bindings import http as binding
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from tests.servers import ROOT, RunningServer, serve, serve_asgi

MODELS = ROOT / "tests" / "models" / "hostile.py"
MAX_GROWTH = 50 * 1024 * 1024
MAX_SECONDS = 3.0


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve(str(MODELS), "--dialect", "native") as running:
        yield running


@pytest.fixture(scope="module")
def channel(server: RunningServer) -> Iterator[grpc.Channel]:
    with server.grpc_channel() as opened:
        yield opened


def echo_request(raw_key: bytes) -> bytes:
    """A ModelInfer request of the echo model whose one raw input follows ``raw_key``."""
    message = pb.ModelInferRequest(model_name="echo")
    message.inputs.add(name="x", datatype="INT32", shape=[2])
    blob = np.array([1, 2], dtype="<i4").tobytes()
    return message.SerializeToString() + raw_key + bytes([len(blob)]) + blob


@pytest.mark.parametrize(
    ("key", "accepted"),
    [
        (b"\x3a", True),  # field 7, length-delimited: the usual one-byte key
        (bytes.fromhex("ba80808000"), True),  # the same key in 5 bytes: protobuf reads it
        (bytes.fromhex("ba8080808000"), False),  # in 6 bytes: protobuf refuses the message
        (bytes.fromhex("ba808080808080808000"), False),  # in 10
    ],
)
def test_an_overlong_field_key_is_refused_as_protobuf_refuses_it(
    server: RunningServer, channel: grpc.Channel, key: bytes, accepted: bool
) -> None:
    wire = echo_request(key)
    try:
        pb.ModelInferRequest.FromString(wire)
        assert accepted
    except Exception:
        assert not accepted
    call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")  # bytes in, bytes out
    before, started = server.peak_memory(), time.monotonic()
    if accepted:
        answer = pb.ModelInferResponse.FromString(call(wire, timeout=10))
        assert np.frombuffer(answer.raw_output_contents[0], "<i4").tolist() == [1, 2]
    else:
        with pytest.raises(grpc.RpcError) as caught:
            call(wire, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details().startswith("malformed request: Error parsing message")
    assert time.monotonic() - started < MAX_SECONDS
    assert server.peak_memory() - before < MAX_GROWTH
    with server.http(timeout=10) as http:
        live = http.post(
            "/v2/models/echo/infer",
            json={"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [3]}]},
        )
    assert live.status_code == 200


# ---- CloudEvents: ids a client chose arrive at a sink as they were sent ----


@contextmanager
def cloudevents_sink() -> Iterator[tuple[str, list[CloudEvent]]]:
    """A sink on loopback decoding each POST with the CloudEvents SDK's HTTP binding."""
    received: list[CloudEvent] = []

    async def receive(request: Request) -> Response:
        message = binding.HTTPMessage(dict(request.headers), await request.body())
        received.append(binding.from_binary(message, JSONFormat(), CloudEvent))
        return Response(status_code=202)

    with serve_asgi(Starlette(routes=[Route("/", receive, methods=["POST"])])) as url:
        yield url + "/", received


def test_request_ids_reach_a_cloudevents_sink_as_the_client_sent_them() -> None:
    rest_id = 'a b"%41\u00e9'  # a header is Latin-1: é is one byte in X-Request-ID
    grpc_id = "\u2211-\U0001f600"  # a V2 body's id is any Unicode
    with cloudevents_sink() as (url, received):
        with serve(str(MODELS), "--dialect", "native", env={"INFERD_PAYLOAD_LOG_URL": url}) as server:
            before, started = server.peak_memory(), time.monotonic()
            with server.http(timeout=10) as http:
                answer = http.post(
                    "/v2/models/echo/infer",
                    json={"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [3]}]},
                    headers={"x-request-id": rest_id.encode("latin-1")},
                )
            assert answer.status_code == 200
            with server.grpc_channel() as channel:
                call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
                request = pb.ModelInferRequest.FromString(echo_request(b"\x3a"))
                request.id = grpc_id
                call(request.SerializeToString(), timeout=10)
            deadline = time.monotonic() + 5
            while len(received) < 4 and time.monotonic() < deadline:
                time.sleep(0.02)
            took = time.monotonic() - started
            grown = server.peak_memory() - before
            log = server.log
    ids = sorted((event.get_id(), event.get_type().rsplit(".", 1)[1]) for event in received)
    expected = [(rest_id, "request"), (rest_id, "response"), (grpc_id, "request"), (grpc_id, "response")]
    assert ids == sorted(expected)
    assert "cannot be sent" not in log
    assert took < 5 and grown < MAX_GROWTH
