"""The gateway's gRPC side: tritonclient.grpc calling real ``inferd serve`` processes through it by the
``inferd-endpoint`` metadata, a 100/0 → 0/100 switch under a thread of calls with no failed call,
what passes through unchanged (raw messages, metadata, status, deadline: against a small echoing
gRPC server), its own errors, shadow copies of calls, and a streaming method (tritonclient's
stream against a small server of ``ModelStreamInfer``)."""

from __future__ import annotations

import asyncio
import queue
import re
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import numpy as np
import pytest
import tritonclient.grpc as triton
import uvloop
from prometheus_client import REGISTRY
from tritonclient.grpc import service_pb2

from inferd.platform.gateway import EndpointTable
from inferd.platform.gateway.grpc_proxy import GrpcGatewayServer, serve_grpc_gateway
from inferd.protocols.h2.frames import END_HEADERS, GOAWAY, HEADERS, PREFACE, WINDOW_UPDATE, frame
from inferd.server.auth import Tokens
from tests.platform.gateway.grpc_support import GrpcLoad, infer, refusal, scales  # noqa: F401
from tests.servers import RunningServer, frame_types, free_port

T = TypeVar("T")


@dataclass
class RunningGrpcGateway:
    server: GrpcGatewayServer
    loop: asyncio.AbstractEventLoop

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@contextmanager
def run_grpc_gateway(table: EndpointTable, **options: Any) -> Iterator[RunningGrpcGateway]:
    """`serve_grpc_gateway` on a free port in a thread running its own event loop (uvloop)."""
    loop = uvloop.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        server = asyncio.run_coroutine_threadsafe(serve_grpc_gateway(table, **options), loop).result(10)
        running = RunningGrpcGateway(server, loop)
        try:
            yield running
        finally:
            running.call(server.stop(1))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def routes(*servers: RunningServer) -> dict[str, str]:
    return {server.http_address: str(server.grpc_address) for server in servers}


@contextmanager
def main_to(server: RunningServer, **options: Any) -> Iterator[tuple[RunningGrpcGateway, EndpointTable]]:
    """A gRPC gateway started with ``options`` whose endpoint ``main`` routes to ``server``."""
    table = EndpointTable()
    table.set("main", [(server.http_address, 100)], None, routes(server))
    with run_grpc_gateway(table, **options) as gateway:
        yield gateway, table


def test_calls_follow_the_weights_and_switch_without_failing(
    scales: tuple[RunningServer, RunningServer],  # noqa: F811
) -> None:
    one, two = scales
    table = EndpointTable()
    table.set("main", [(one.http_address, 100), (two.http_address, 0)], None, routes(one, two))
    table.set("other", [(two.http_address, 100)], None, routes(two))
    with run_grpc_gateway(table) as gateway:
        assert infer(gateway.address, "main") == 1.0
        assert infer(gateway.address, "other", 3.0) == 6.0
        with GrpcLoad(gateway.address) as load:
            time.sleep(0.5)
            table.set("main", [(one.http_address, 0), (two.http_address, 100)], None, routes(one, two))
            assert gateway.call(table.drained(one.http_address, 10))  # its gRPC calls are counted
            time.sleep(0.5)
        assert load.failures == [] and 1.0 in load.answers and load.answers[-1] == 2.0
        assert len(load.answers) > 20
        assert infer(gateway.address, "main") == 2.0


def test_endpoint_by_default_unknown_endpoint_and_dead_service(
    scales: tuple[RunningServer, RunningServer],  # noqa: F811
) -> None:
    one, _ = scales
    with main_to(one) as (gateway, table):
        assert infer(gateway.address, None) == 1.0  # the only endpoint, without the metadata
        assert refusal(gateway.address, "nope") == ("StatusCode.NOT_FOUND", "no endpoint named 'nope'")
        dead = f"127.0.0.1:{free_port()}"
        table.set("dead", [(dead, 100)], None, {dead: f"127.0.0.1:{free_port()}"})
        status, message = refusal(gateway.address, None)  # two endpoints: which?
        assert status == "StatusCode.NOT_FOUND" and "inferd-endpoint" in message
        assert refusal(gateway.address, "dead") == (
            "StatusCode.UNAVAILABLE",
            "endpoint 'dead': its service is unavailable",
        )
        table.set("http-only", [(one.http_address, 100)])
        assert refusal(gateway.address, "http-only")[0] == "StatusCode.UNAVAILABLE"
        table.set("zero", [(one.http_address, 0)], None, routes(one))
        assert refusal(gateway.address, "zero")[0] == "StatusCode.UNAVAILABLE"
        # the service's own error, as it said it
        with grpc.insecure_channel(gateway.address) as channel:
            ready = channel.unary_unary("/inference.GRPCInferenceService/ModelMetadata")
            with pytest.raises(grpc.RpcError) as failed:
                ready(b"\n\x04nope", metadata=[("inferd-endpoint", "main")], timeout=10)
            assert failed.value.code() is grpc.StatusCode.NOT_FOUND
            assert "nope" in str(failed.value.details())


def test_tokens(scales: tuple[RunningServer, RunningServer]) -> None:  # noqa: F811
    with main_to(scales[0], tokens=Tokens(["secret"])) as (gateway, _):
        assert refusal(gateway.address)[0] == "StatusCode.UNAUTHENTICATED"
        assert refusal(gateway.address, authorization="Bearer wrong")[0] == "StatusCode.UNAUTHENTICATED"
        assert infer(gateway.address, authorization="Bearer secret") == 1.0


ECHO = "/test.Echo/Echo"
#: The name the only endpoint's service has in the table (its gRPC address is what counts).
ONLY = "127.0.0.1:1"


class Echo(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Answers the request's bytes reversed, its metadata (``x-*``; others as ``x-seen-*``) and
    remaining deadline in the trailing metadata; ``/test.Echo/Fail`` fails with DATA_LOSS and a detail,
    ``/test.Echo/Hang`` never answers."""

    def service(self, details: Any) -> Any:
        async def echo(request: bytes, context: Any) -> bytes:
            seen = [
                (key if key.startswith("x-") else f"x-seen-{key}", value)
                for key, value in context.invocation_metadata()
                if key.startswith("x-") or key in ("authorization", "inferd-endpoint", "traceparent")
            ]
            remaining = context.time_remaining()
            context.set_trailing_metadata(
                (*seen, ("x-remaining", f"{remaining:.3f}" if remaining is not None else "none"))
            )
            await context.send_initial_metadata((("x-initial", "yes"),))
            if details.method == "/test.Echo/Fail":
                await context.abort(grpc.StatusCode.DATA_LOSS, "lost, as said")
            if details.method == "/test.Echo/Hang":
                await asyncio.Event().wait()
            return request[::-1]

        return grpc.unary_unary_rpc_method_handler(echo)


async def start_server(handler: grpc.GenericRpcHandler) -> tuple[grpc.aio.Server, str]:
    """A grpc.aio server of ``handler`` on a free port, in the running loop."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


@contextmanager
def behind_gateway(handler: grpc.GenericRpcHandler, **options: Any) -> Iterator[RunningGrpcGateway]:
    """A grpc.aio server of ``handler``, the only endpoint (``only``, upstream ``ONLY``) of a gRPC
    gateway started with ``options``."""
    table = EndpointTable()
    with run_grpc_gateway(table, **options) as gateway:
        server, address = gateway.call(start_server(handler))
        try:
            table.set("only", [(ONLY, 100)], None, {ONLY: address})
            yield gateway
        finally:
            gateway.call(server.stop(0))


def test_messages_metadata_status_and_deadline_pass_through() -> None:
    with behind_gateway(Echo(), upstream_token="inner", max_message_size=1024) as gateway:
        with grpc.insecure_channel(gateway.address) as channel:
            method = channel.unary_unary(ECHO)
            answer, call = method.with_call(
                bytes(range(256)),
                metadata=[
                    ("x-custom", "kept"),
                    ("x-binary-bin", b"\x00\xff"),
                    ("authorization", "Bearer o"),
                    ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
                ],
                timeout=5,
            )
            assert answer == bytes(range(256))[::-1]
            trailing = dict(call.trailing_metadata())
            assert trailing["x-custom"] == "kept" and trailing["x-binary-bin"] == b"\x00\xff"
            assert trailing["x-seen-authorization"] == "Bearer inner"  # the gateway's, not the client's
            assert (
                trailing["x-seen-traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            )  # a trace goes on
            assert "x-seen-inferd-endpoint" not in trailing  # the only endpoint, by default
            # the deadline went along (gRPC rounds the timeout it encodes: a few ms over is the same)
            assert 0 < float(trailing["x-remaining"]) <= 5.1
            assert dict(call.initial_metadata())["x-initial"] == "yes"
            with pytest.raises(grpc.RpcError) as failed:
                channel.unary_unary("/test.Echo/Fail")(b"", timeout=5)
            assert failed.value.code() is grpc.StatusCode.DATA_LOSS
            assert failed.value.details() == "lost, as said"
            with pytest.raises(grpc.RpcError) as failed:
                method(b"x" * 2048, timeout=5)
            assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def grpc_answers(server: RunningServer) -> float:
    """How many gRPC calls ``server`` answered for model ``scale`` (its ``/metrics``)."""
    with server.http() as http:
        text = http.get("/metrics").text
    pattern = r'^inferd_requests_total\{model="scale",outcome="ok",protocol="grpc"\} (\S+)$'
    return sum(float(found) for found in re.findall(pattern, text, re.MULTILINE))


def test_a_shadow_gets_copies_of_the_calls_and_the_client_the_primary_answer(
    scales: tuple[RunningServer, RunningServer],  # noqa: F811
) -> None:
    one, two = scales
    table = EndpointTable()
    table.set("main", [(one.http_address, 100)], (two.http_address, 100), routes(one, two))
    copies = ("inferd_gateway_shadow_requests_total", {"endpoint": "main", "outcome": "200"})
    before, counted = grpc_answers(two), REGISTRY.get_sample_value(*copies) or 0
    with run_grpc_gateway(table) as gateway:
        assert [infer(gateway.address, "main", value) for value in (1.0, 2.0, 3.0)] == [1.0, 2.0, 3.0]
        deadline = time.monotonic() + 10  # the copies are sent after the answers, in the background
        while grpc_answers(two) < before + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert grpc_answers(two) == before + 3
        assert (REGISTRY.get_sample_value(*copies) or 0) == counted + 3
        table.set("main", [(one.http_address, 100)], (two.http_address, 0), routes(one, two))
        assert infer(gateway.address, "main") == 1.0
        assert gateway.call(table.drained(two.http_address, 10))  # the copies were counted in flight
    assert grpc_answers(two) == before + 3


STREAM_INFER = "/inference.GRPCInferenceService/ModelStreamInfer"


class StreamingScale(grpc.GenericRpcHandler):  # type: ignore[misc]
    """V2's (Triton's) ``ModelStreamInfer``, which inferd's own servers do not serve: each request's
    FP32 ``x`` comes back tripled as ``y``, one answer per request, on the same stream."""

    def service(self, details: Any) -> Any:
        if details.method != STREAM_INFER:
            return None

        async def stream(requests: Any, context: Any) -> Any:
            async for request in requests:
                x = np.frombuffer(request.raw_input_contents[0], np.float32)
                answer = service_pb2.ModelInferResponse(model_name=request.model_name, id=request.id)
                answer.outputs.add(name="y", datatype="FP32", shape=[len(x)])
                answer.raw_output_contents.append((x * 3).tobytes())
                yield service_pb2.ModelStreamInferResponse(infer_response=answer)

        return grpc.stream_stream_rpc_method_handler(
            stream,
            request_deserializer=service_pb2.ModelInferRequest.FromString,
            response_serializer=service_pb2.ModelStreamInferResponse.SerializeToString,
        )


def test_streaming_calls_pass_both_ways() -> None:
    with behind_gateway(StreamingScale()) as gateway:
        answers: queue.Queue[Any] = queue.Queue()
        with triton.InferenceServerClient(gateway.address) as client:
            client.start_stream(lambda result, error: answers.put(error or result))
            for number in range(1, 4):
                tensor = triton.InferInput("x", [2], "FP32")
                tensor.set_data_from_numpy(np.array([number, 10 * number], np.float32))
                client.async_stream_infer("scale", [tensor], request_id=str(number))
                answer = answers.get(timeout=10)  # each answer before the next request
                assert not isinstance(answer, Exception), answer
                assert answer.get_response().id == str(number)
                assert answer.as_numpy("y").tolist() == [3.0 * number, 30.0 * number]
            client.stop_stream()


def test_messages_larger_than_every_window_pass_both_ways() -> None:
    """3 MiB each way: more than the flow-control windows of either side, so the relay must pass
    window updates on as it passes data (and several calls at once share a connection)."""
    with behind_gateway(Echo()) as gateway:
        with grpc.insecure_channel(gateway.address) as channel:
            method = channel.unary_unary(ECHO)
            messages = [bytes([number]) * (3 * 1024 * 1024) + b"end" for number in range(4)]
            calls = [method.future(message, timeout=30) for message in messages]
            assert [call.result() for call in calls] == [message[::-1] for message in messages]


def test_a_call_the_client_gives_up_on_is_no_longer_counted() -> None:
    """The client's deadline passes (it resets the stream): the service's stream is cancelled and
    the call leaves the in-flight count, so draining a service does not wait for it."""
    with behind_gateway(Echo()) as gateway:
        with grpc.insecure_channel(gateway.address) as channel:
            with pytest.raises(grpc.RpcError) as failed:
                channel.unary_unary("/test.Echo/Hang")(b"", timeout=0.3)
            assert failed.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        assert gateway.call(gateway.server.gateway.table.drained(ONLY, 10))


def test_a_client_breaking_http2_gets_goaway_and_the_others_are_still_served(
    scales: tuple[RunningServer, RunningServer],  # noqa: F811
) -> None:
    with main_to(scales[0]) as (gateway, _):
        for garbage in (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # not HTTP/2: closed at once
            PREFACE + frame(WINDOW_UPDATE, 0, 0, b"\x00\x01"),  # a WINDOW_UPDATE of 2 bytes
            PREFACE + frame(HEADERS, END_HEADERS, 1, b"\xff\xff\xff\xff"),  # not HPACK
        ):
            with socket.create_connection(("127.0.0.1", gateway.server.port), timeout=10) as sock:
                sock.sendall(garbage)
                received = b""
                while chunk := sock.recv(65536):  # until the gateway closes the connection
                    received += chunk
                if garbage.startswith(PREFACE):
                    assert GOAWAY in frame_types(received)
        assert infer(gateway.address, "main") == 1.0
