"""Both gRPC servers (grpc.aio and inferd's own, `inferd.server.grpc_native`) against one small
handler in this process, on a free loopback port: what a call carries both ways (messages, metadata,
status, deadline), streams, messages past every flow-control window, limits, unknown methods,
graceful stop; then what only the native server has to get right itself (broken HTTP/2, a request
that is not gRPC) and ``inferd serve --grpc-server grpcio`` end to end (the native server, the
default, serves every other test of the suite)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import hpack
import numpy as np
import pytest
import tritonclient.grpc as triton
from tritonclient.utils import InferenceServerException

from inferd.protocols.h2.frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    frame,
)
from inferd.protocols.h2.grpc_wire import framed, timeout_seconds
from inferd.protocols.h2.hpack_out import encode_block
from inferd.protocols.h2.sending import BY_REFERENCE
from inferd.server.grpc_context import metadata_of
from inferd.server.grpc_native import NativeGrpcServer
from tests.conftest import IRIS
from tests.servers import LoopThread, frame_types, loop_thread, serve

T = TypeVar("T")
SERVERS = ("grpcio", "inferd")
LIMIT = 8 * 1024 * 1024
ECHO, FAIL, HANG, SLOW, STREAM = (f"/test.Echo/{name}" for name in ("Echo", "Fail", "Hang", "Slow", "Stream"))


class Echo(grpc.GenericRpcHandler):  # type: ignore[misc]
    """``Echo`` answers the request reversed, its ``x-*`` metadata and remaining deadline as trailing
    metadata; ``Fail`` aborts DATA_LOSS with a non-ASCII detail; ``Hang`` never answers; ``Slow``
    answers after 0.5 s; ``Stream`` answers each message of a stream doubled."""

    def service(self, details: Any) -> Any:
        if details.method == STREAM:

            async def stream(requests: Any, context: Any) -> Any:
                async for request in requests:
                    yield request * 2

            return grpc.stream_stream_rpc_method_handler(stream)
        if details.method not in (ECHO, FAIL, HANG, SLOW):
            return None

        async def echo(request: bytes, context: Any) -> bytes:
            seen = [(key, value) for key, value in context.invocation_metadata() if key.startswith("x-")]
            remaining = context.time_remaining()
            context.set_trailing_metadata(
                (*seen, ("x-remaining", f"{remaining:.3f}" if remaining else "none"))
            )
            await context.send_initial_metadata((("x-initial", "yes"),))
            if details.method == FAIL:
                await context.abort(grpc.StatusCode.DATA_LOSS, "perdu, comme dit: ½ 100%")
            if details.method == HANG:
                await asyncio.Event().wait()
            if details.method == SLOW:
                await asyncio.sleep(0.5)
            return bytes(request[::-1])

        return grpc.unary_unary_rpc_method_handler(echo)


@dataclass
class Running:
    server: Any
    port: int
    thread: LoopThread

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return self.thread.call(coroutine, timeout)


async def _start(kind: str) -> tuple[Any, int]:
    if kind == "inferd":
        server: Any = NativeGrpcServer((), LIMIT, LIMIT)
    else:
        server = grpc.aio.server(
            options=[("grpc.max_receive_message_length", LIMIT), ("grpc.max_send_message_length", LIMIT)]
        )
    server.add_generic_rpc_handlers((Echo(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


@contextmanager
def running(kind: str) -> Iterator[Running]:
    """The ``kind`` server of `Echo` on a free port, in a thread running its own event loop."""
    with loop_thread() as thread:
        server, port = thread.call(_start(kind), 10)
        try:
            yield Running(server, port, thread)
        finally:
            thread.call(server.stop(0))


@pytest.fixture(scope="module", params=SERVERS)
def server(request: pytest.FixtureRequest) -> Iterator[Running]:
    with running(request.param) as served:
        yield served


def test_messages_metadata_status_and_deadline(server: Running) -> None:
    with grpc.insecure_channel(server.address) as channel:
        answer, call = channel.unary_unary(ECHO).with_call(
            bytes(range(256)), metadata=[("x-custom", "kept"), ("x-binary-bin", b"\x00\xff")], timeout=5
        )
        assert answer == bytes(range(256))[::-1]
        trailing = dict(call.trailing_metadata())
        assert trailing["x-custom"] == "kept" and trailing["x-binary-bin"] == b"\x00\xff"
        assert 0 < float(trailing["x-remaining"]) <= 5.1
        assert dict(call.initial_metadata())["x-initial"] == "yes"
        _, call = channel.unary_unary(ECHO).with_call(b"")
        assert dict(call.trailing_metadata())["x-remaining"] == "none"
        with pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary(FAIL)(b"", timeout=5)
        assert failed.value.code() is grpc.StatusCode.DATA_LOSS
        assert failed.value.details() == "perdu, comme dit: ½ 100%"


def test_streams_and_many_calls_on_one_connection(server: Running) -> None:
    with grpc.insecure_channel(server.address) as channel:
        answers = channel.stream_stream(STREAM)(iter([b"a", b"bc", b""]), timeout=10)
        assert list(answers) == [b"aa", b"bcbc", b""]
        method = channel.unary_unary(ECHO)
        calls = [method.future(str(number).encode(), timeout=10) for number in range(200)]
        assert [call.result() for call in calls] == [str(number).encode()[::-1] for number in range(200)]


def test_messages_larger_than_every_window_pass_both_ways(server: Running) -> None:
    with grpc.insecure_channel(server.address) as channel:
        method = channel.unary_unary(ECHO)
        messages = [bytes([number]) * (3 * 1024 * 1024) + b"end" for number in range(3)]
        calls = [method.future(message, timeout=30) for message in messages]
        assert [call.result() for call in calls] == [message[::-1] for message in messages]


def test_limits_deadlines_and_unknown_methods(server: Running) -> None:
    with grpc.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary(ECHO)(bytes(LIMIT + 1), timeout=30)
        assert failed.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(LIMIT) in (failed.value.details() or "")
        with pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary(HANG)(b"", timeout=0.3)
        assert failed.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary("/test.Echo/Nothing")(b"", timeout=5)
        assert failed.value.code() is grpc.StatusCode.UNIMPLEMENTED
        assert channel.unary_unary(ECHO)(b"still here", timeout=5) == b"ereh llits"
    if isinstance(server.server, NativeGrpcServer):
        assert not server.server.calls  # the hanging call is over, not left in flight


@pytest.mark.parametrize("kind", SERVERS)
def test_stop_lets_calls_in_flight_finish_and_takes_no_more(kind: str) -> None:
    with running(kind) as served, grpc.insecure_channel(served.address) as channel:
        slow = channel.unary_unary(SLOW).future(b"ab", timeout=10)
        assert channel.unary_unary(ECHO)(b"", timeout=5) == b""  # the slow call is in flight now
        served.call(served.server.stop(5))
        assert slow.result() == b"ba"
        with grpc.insecure_channel(served.address) as late, pytest.raises(grpc.RpcError) as failed:
            late.unary_unary(ECHO)(b"", timeout=2)
        assert failed.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _exchange(port: int, data: bytes, until: int) -> bytes:
    """Send ``data`` on a new connection; what is received until a frame of type ``until`` arrives."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        while until not in frame_types(received) and (chunk := sock.recv(65536)):
            received += chunk
    return received


def _raw_status(port: int, body: bytes) -> tuple[str, str]:
    """``body`` sent as the DATA of one `ECHO` call, frame by frame; the answer's grpc-status and
    grpc-message."""
    block = encode_block(
        (
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", ECHO.encode()),
            (b":authority", b"x"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        )
    )
    sent = PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block)
    sent += frame(DATA, END_STREAM, 1, body)
    decoder, fields, received = hpack.Decoder(), {}, b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(sent)
        while b"grpc-status" not in fields and (chunk := sock.recv(65536)):
            received += chunk
            while len(received) >= 9 and len(received) >= 9 + int.from_bytes(received[:3], "big"):
                length = int.from_bytes(received[:3], "big")
                kind, payload, received = received[3], received[9 : 9 + length], received[9 + length :]
                if kind == HEADERS:
                    fields.update(dict(decoder.decode(payload, raw=True)))
                assert kind not in (GOAWAY, RST_STREAM) or b"grpc-status" in fields
    return fields[b"grpc-status"].decode(), fields.get(b"grpc-message", b"").decode()


def test_a_length_declared_over_the_limit_is_refused_from_the_prefix(server: Running) -> None:
    """RESOURCE_EXHAUSTED from the 5-byte prefix alone (nothing is allocated for the message); the
    server serves on."""
    status, message = _raw_status(server.port, b"\x00" + (LIMIT + 1).to_bytes(4, "big") + b"abc")
    assert status == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]) and str(LIMIT) in message
    with grpc.insecure_channel(server.address) as channel:
        assert channel.unary_unary(ECHO)(b"still here", timeout=5) == b"ereh llits"


def test_native_a_request_ending_within_a_message_is_internal() -> None:
    """A length within the limit is not trusted either: a request that ends before that many bytes
    arrived, is INTERNAL (grpcio never answers it), and so is a unary request that begins a second
    message (grpcio ignores it); a whole one still works."""
    with running("inferd") as served:
        for body, why in (
            (prefixed(b"x" * 100)[:-1], "the request ended within a message"),
            (prefixed(b"y" * 100) + b"\x00\x00", "a unary request carries exactly one message"),
        ):
            assert _raw_status(served.port, body) == (str(grpc.StatusCode.INTERNAL.value[0]), why)
        assert _raw_status(served.port, prefixed(b"whole")) == ("0", "")
        assert not served.server.calls


def test_native_broken_http2_is_goaway_and_not_grpc_is_415() -> None:
    with running("inferd") as served:
        received = _exchange(
            served.port, PREFACE + frame(HEADERS, END_HEADERS, 1, b"\xff\xff\xff\xff"), GOAWAY
        )
        assert GOAWAY in frame_types(received)
        block = encode_block(
            ((b":method", b"POST"), (b":scheme", b"http"), (b":path", ECHO.encode()), (b":authority", b"x"))
        )
        received = _exchange(
            served.port, PREFACE + frame(HEADERS, END_HEADERS | END_STREAM, 1, block), HEADERS
        )
        assert b"415" in received
        with grpc.insecure_channel(served.address) as channel:
            assert channel.unary_unary(ECHO)(b"ok", timeout=5) == b"ko"


def prefixed(message: bytes) -> bytes:
    """``message`` as one uncompressed gRPC message on the wire (the server's own framing)."""
    return b"".join(framed((message,))[1])


def test_grpc_wire_pieces() -> None:
    assert prefixed(b"abc") == b"\x00\x00\x00\x00\x03abc"
    large = bytes(BY_REFERENCE)
    length, payloads = framed((b"ab", large, b"c"))  # small runs joined, a large piece by reference
    assert length == len(large) + 3
    assert payloads == [b"\x00" + length.to_bytes(4, "big") + b"ab", large, b"c"]
    assert payloads[1] is large
    assert timeout_seconds(b"100m") == pytest.approx(0.1)
    assert timeout_seconds(b"2S") == 2 and timeout_seconds(b"1H") == 3600
    assert timeout_seconds(b"1x") is None and timeout_seconds(b"123456789S") is None
    headers = [(b":path", b"/a/b"), (b"te", b"trailers"), (b"x-a", b"1"), (b"x-b-bin", b"AP8")]
    assert metadata_of(headers) == (("x-a", "1"), ("x-b-bin", b"\x00\xff"))


def test_inferd_serve_on_grpcio() -> None:
    """The flag, the V2 servicer through tritonclient, and bearer tokens (the interceptor)."""
    env = {"INFERD_AUTH_TOKENS": "secret"}
    with serve(IRIS, "--grpc-server", "grpcio", env=env) as running_server:
        assert running_server.grpc_address is not None
        with triton.InferenceServerClient(running_server.grpc_address) as client:
            assert client.is_server_live()  # probes need no token
            tensor = triton.InferInput("input-0", [1, 4], "FP32")
            tensor.set_data_from_numpy(np.array([[5.1, 3.5, 1.4, 0.2]], np.float32))
            with pytest.raises(InferenceServerException, match=r"(?i)unauthenticated"):
                client.infer("iris", [tensor])
            answer = client.infer("iris", [tensor], headers={"authorization": "Bearer secret"})
            assert answer.as_numpy("label").tolist() == [0]
