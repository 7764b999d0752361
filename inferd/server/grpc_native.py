"""inferd's own gRPC server (``--grpc-server inferd``): gRPC over inferd's HTTP/2 framing
(`inferd.protocols.h2`), serving the same servicers as the grpc.aio server without grpc.aio's
per-call machinery (bench/grpc_floor.py: about 220 us a call, the ceiling of inferd's gRPC on grpcio).

A call is one HTTP/2 stream (`ServerCall`): its header block names the method (``:path``), its
metadata and deadline (``grpc-timeout``); its DATA carries 5-byte-prefixed messages, held to the
receive limit from each prefix (RESOURCE_EXHAUSTED before the message is read), each copied once from
the socket's reads into a buffer of its declared length (`MessageReader`): a 16 MiB tensor arrives
in one buffer, which the handler reads in place (``ModelInfer``'s raw tensors are views of it). A
request that ends within a message is INTERNAL. The handler comes
from a `MethodTable` that generated ``add_XServicer_to_server`` filled, through the interceptors
(bearer tokens, spans) when there are any; its behaviour gets the request and a `NativeContext`. The
answer is HEADERS, DATA and trailers (``grpc-status``, ``grpc-message`` percent-encoded), or
trailers alone for an error; all of it is written at the end of the loop's iteration with the
connection's other frames (`Corker`). A response that gives its serialization in pieces
(`InPieces`: ``ModelInfer``'s, whose raw outputs are the arrays' own memory) is sent from them, the
large ones by reference: nothing of a tensor is copied on the way out.

Graceful stop: listeners close, every connection gets GOAWAY naming its last stream, in-flight calls
finish within the grace period and are cancelled after it. Workers share the port with SO_REUSEPORT
as grpcio's server does (``shared_port``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from inferd.protocols.grpc_status import status_code
from inferd.protocols.h2.connection import FLOOD_LIMIT
from inferd.protocols.h2.frames import NO_ERROR
from inferd.protocols.h2.grpc_wire import MessageReader, framed, grpc_message, timeout_seconds
from inferd.protocols.h2.hpack_out import Header, encode_block
from inferd.protocols.h2.sending import CLOSE_GRACE, Corker, Inbound
from inferd.protocols.h2.server import ServerConnection
from inferd.server.grpc_context import Aborted, Code, Metadata, NativeContext
from inferd.server.grpc_methods import CallDetails, Handler, Interceptor, MethodTable

logger = logging.getLogger("inferd.grpc")
#: Bytes of a streamed answer's messages waiting for the client's window before the next message
#: is made: a client that keeps asking and never reads cannot queue answers without bound.
STREAM_BACKLOG = 4 * 1024 * 1024

RESPONSE_HEADERS = encode_block(((b":status", b"200"), (b"content-type", b"application/grpc")))
OK_TRAILERS = encode_block(((b"grpc-status", b"0"),))
NOT_GRPC = encode_block(((b":status", b"415"), (b"content-type", b"text/plain")))
BACKLOG = 2048


class NativeGrpcServer:
    """The gRPC port of one server process; what the engine calls of a ``grpc.aio.Server``
    (``add_insecure_port``, ``start``, ``stop``) and what generated code registers methods with."""

    def __init__(
        self,
        interceptors: Sequence[Interceptor],
        receive_limit: int,
        send_limit: int,
        shared_port: bool = False,
        flood_limit: int = FLOOD_LIMIT,
    ) -> None:
        self.methods = MethodTable(interceptors)
        self.flood_limit = flood_limit
        self.receive_limit, self.send_limit, self.shared_port = receive_limit, send_limit, shared_port
        self.sockets: list[socket.socket] = []
        self.listeners: list[asyncio.AbstractServer] = []
        self.connections: set[GrpcServerConnection] = set()
        self.calls: set[ServerCall] = set()
        self.idle: asyncio.Future[None] | None = None
        self.corker: Corker | None = None

    # Registration (generated code, through `grpc_requests.Registrar`)
    def add_registered_method_handlers(self, service: str, handlers: dict[str, Handler]) -> None:
        self.methods.add_registered_method_handlers(service, handlers)

    def add_generic_rpc_handlers(self, handlers: Sequence[Any]) -> None:
        self.methods.add_generic_rpc_handlers(handlers)

    # Lifecycle
    def add_insecure_port(self, address: str) -> int:
        """Bind ``host:port`` (0: a free port) and return the port; served once `start` runs."""
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.shared_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, int(port)))
        except OSError:
            sock.close()
            raise
        self.sockets.append(sock)
        bound: int = sock.getsockname()[1]
        return bound

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.corker = Corker(loop)
        for sock in self.sockets:
            listener = await loop.create_server(
                lambda: GrpcServerConnection(self), sock=sock, backlog=BACKLOG
            )
            self.listeners.append(listener)

    async def stop(self, grace: float | None) -> None:
        """Stop taking calls, let those in flight finish within ``grace`` seconds, cancel the rest."""
        for listener in self.listeners:
            listener.close()
        for connection in list(self.connections):
            connection.stop_taking()
        if self.calls and grace:
            self.idle = asyncio.get_running_loop().create_future()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.idle), grace)
        for call in list(self.calls):
            call.cancel()
        for connection in list(self.connections):
            connection.close()
        await self._cut_lingering(CLOSE_GRACE)
        for listener in self.listeners:
            await listener.wait_closed()
        self.listeners.clear()

    async def _cut_lingering(self, seconds: float) -> None:
        """Connections closing (each reading what its peer still sends until the peer ends its side)
        get ``seconds`` at most, then are cut: a stopped server leaves no socket open behind it (its
        event loop may be closed next, which a socket still open makes fail)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self.connections and loop.time() < deadline:
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.abort()
        await asyncio.sleep(0)  # their connection_lost runs before the caller goes on

    def call_over(self, call: ServerCall) -> None:
        self.calls.discard(call)
        if not self.calls and self.idle is not None and not self.idle.done():
            self.idle.set_result(None)


class GrpcServerConnection(ServerConnection["ServerCall"]):
    """A client's connection; each stream it opens is a `ServerCall`."""

    def __init__(self, server: NativeGrpcServer) -> None:
        assert server.corker is not None
        super().__init__(server.corker, server.flood_limit)
        self.server = server
        self.peer = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.server.connections.add(self)
        address = transport.get_extra_info("peername")
        if isinstance(address, tuple):
            host, port = address[0], address[1]
            self.peer = f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"

    def on_headers(self, stream: int, headers: list[Header], end: bool) -> None:
        call = self.calls.get(stream)
        if call is not None:  # trailers of a request: gRPC clients send none, HTTP/2 allows them
            if end:
                call.request_over()
            return
        if not self.opens(stream):
            return
        method, timeout, content_type = "", None, b""
        for name, value in headers:
            if name == b":path":
                method = value.decode("latin-1")
            elif name == b"content-type":
                content_type = value
            elif name == b"grpc-timeout":
                timeout = timeout_seconds(value)
        if not content_type.startswith(b"application/grpc"):
            self.write_headers(stream, NOT_GRPC, True)
            if not end:
                self.reset(stream, NO_ERROR)
            return
        call = ServerCall(self, stream, method, headers, timeout)
        self.calls[stream] = call
        self.server.calls.add(call)
        call.begin(end)

    def on_lost(self) -> None:
        super().on_lost()
        self.server.connections.discard(self)


class ServerCall:
    """One call: its request's messages in, its handler run in a task, its answer out."""

    __slots__ = (
        "answered",
        "connection",
        "context",
        "handler",
        "inbound",
        "method",
        "owed",
        "reader",
        "request_ended",
        "stream",
        "task",
        "timer",
        "waiter",
    )

    def __init__(
        self,
        connection: GrpcServerConnection,
        stream: int,
        method: str,
        headers: list[Header],
        timeout: float | None,
    ) -> None:
        self.connection, self.stream, self.method = connection, stream, method
        server = connection.server
        deadline = None if timeout is None else time.monotonic() + timeout
        self.context = NativeContext(headers, deadline, connection.peer)
        self.inbound = Inbound(connection, stream)
        self.reader = MessageReader(server.receive_limit)
        #: Bytes received and not credited to the client: whole messages the handler has not taken.
        self.owed = 0
        self.handler: Handler | None = None
        self.task: asyncio.Task[None] | None = None
        #: A request-streaming handler, or the interceptors, waiting for more of the request.
        self.waiter: asyncio.Future[None] | None = None
        self.timer = None if timeout is None else connection.corker.loop.call_later(timeout, self.expired)
        self.request_ended = self.answered = False

    # The request
    def begin(self, end: bool) -> None:
        """The header block arrived: find the handler (through the interceptors, in the task)."""
        if end:
            self.request_ended = self.inbound.ended = True
        methods = self.connection.server.methods
        if methods.interceptors:
            self.task = self.connection.corker.loop.create_task(self.intercepted())
            return
        handler = methods.handlers.get(self.method)
        if handler is None:
            handler = methods.find(CallDetails(self.method, self.context.invocation_metadata()))
            if handler is None:
                self.unimplemented()
                return
        self.handler = handler
        if end or handler.request_streaming:
            self.task = self.connection.corker.loop.create_task(self.run(handler))

    def request_data(self, data: memoryview, flow: int, end: bool) -> None:
        if end:
            self.request_ended = self.inbound.ended = True
        reader = self.reader
        too_large = reader.feed(data)
        if too_large is not None:
            self.connection.credit(flow)
            limit = self.connection.server.receive_limit
            self.fail(
                status_code("RESOURCE_EXHAUSTED"),
                f"Received message larger than max ({too_large} vs. {limit})",
            )
            return
        if reader.messages:  # whole messages wait for the handler: the client waits for it too
            self.owed += flow
            if self.second_message():
                return
        else:  # part of a message, held within the receive limit: the client may send on
            self.inbound.credit(flow)
        if end:
            self.request_over()
        elif self.reader.messages:
            self.wake()

    def second_message(self) -> bool:
        """Whether a unary call's request began a second message: then the call ends (INTERNAL,
        and RST_STREAM so the client stops sending), as grpcio's server ends it."""
        handler, reader = self.handler, self.reader
        if handler is None or handler.request_streaming:
            return False
        if len(reader.messages) > 1 or reader.partial:
            self.fail(status_code("INTERNAL"), "a unary request carries exactly one message")
            return True
        return False

    def taken(self) -> None:
        """The handler took the messages that waited: the client may send as much again."""
        if self.owed and not self.reader.messages:
            owed, self.owed = self.owed, 0
            self.inbound.credit(owed)

    def request_over(self) -> None:
        self.request_ended = self.inbound.ended = True
        handler = self.handler
        if self.task is None and handler is not None:
            self.task = self.connection.corker.loop.create_task(self.run(handler))
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def more(self) -> None:
        """Wait for the next of the request's DATA (or its end)."""
        self.waiter = self.connection.corker.loop.create_future()
        await self.waiter
        self.waiter = None

    def whole_message(self) -> memoryview:
        """The one message of a unary request."""
        reader = self.reader
        if reader.partial:
            raise Aborted(status_code("INTERNAL"), "the request ended within a message")
        if len(reader.messages) != 1:
            raise Aborted(status_code("INTERNAL"), "a unary request carries exactly one message")
        compressed, message = reader.messages.popleft()
        self.taken()
        if compressed:
            raise Aborted(status_code("UNIMPLEMENTED"), "compressed messages are not supported")
        return memoryview(message)

    async def messages(self) -> AsyncIterator[bytes]:
        """A streaming request's messages, as they arrive."""
        reader = self.reader
        while True:
            while reader.messages:
                compressed, message = reader.messages.popleft()
                self.taken()
                if compressed:
                    raise Aborted(status_code("UNIMPLEMENTED"), "compressed messages are not supported")
                yield bytes(message)
            if self.request_ended:
                if reader.partial:
                    raise Aborted(status_code("INTERNAL"), "the request ended within a message")
                return
            await self.more()

    # The handler
    async def intercepted(self) -> None:
        try:
            details = CallDetails(self.method, self.context.invocation_metadata())
            handler = await self.connection.server.methods.resolve(details)
        except Exception as exc:
            self.failed(exc)
            return
        if handler is None:
            self.unimplemented()
            return
        self.handler = handler
        if self.reader.messages and self.second_message():
            return
        while not handler.request_streaming and not self.request_ended:
            await self.more()
        await self.run(handler)

    async def run(self, handler: Handler) -> None:
        """Run ``handler`` on the request and answer; its errors become the call's status."""
        try:
            if handler.request_streaming:
                request: Any = _deserialized(self.messages(), handler.request_deserializer)
            else:
                message = self.whole_message()
                deserialize = handler.request_deserializer
                request = message if deserialize is None else deserialize(message)
            context = self.context
            if handler.response_streaming:
                behaviour = handler.stream_stream if handler.request_streaming else handler.unary_stream
                self.start_answer()
                async for response in behaviour(request, context):
                    self.send(response, handler)
                    while (
                        out := self.connection.outbound.get(self.stream)
                    ) and out.waiting() > STREAM_BACKLOG:
                        await asyncio.sleep(0.005)  # the client reads no more: neither does the stream
            else:
                behaviour = handler.stream_unary if handler.request_streaming else handler.unary_unary
                response = await behaviour(request, context)
                self.start_answer()
                self.send(response, handler)
            self.finish_answer()
        except asyncio.CancelledError:
            self.over()  # the client reset, the deadline passed, or the server stopped
        except Exception as exc:
            self.failed(exc)

    # The answer
    def start_answer(self) -> None:
        if not self.answered:
            outbound = self.connection.open_outbound(self.stream)
            initial = self.context.initial
            block = RESPONSE_HEADERS
            if initial:
                block += encode_block(_metadata_fields(initial))
            self.connection.send_headers(outbound, block, False)
            self.answered = True

    def send(self, response: Any, handler: Handler) -> None:
        pieces = getattr(response, "wire_pieces", None)  # `InPieces`: its serializer would join them
        if pieces is None:
            serialize = handler.response_serializer
            length, payloads = framed((response if serialize is None else serialize(response),))
        else:
            length, payloads = framed(pieces())
        limit = self.connection.server.send_limit
        if length > limit:
            too_large = f"Sent message larger than max ({length} vs. {limit})"
            raise Aborted(status_code("RESOURCE_EXHAUSTED"), too_large)
        outbound = self.connection.outbound.get(self.stream)
        if outbound is not None:
            for payload in payloads:
                self.connection.send_data(outbound, payload, False, None, 0)

    def finish_answer(self) -> None:
        trailers = self.context.trailers
        block = OK_TRAILERS if not trailers else OK_TRAILERS + encode_block(_metadata_fields(trailers))
        outbound = self.connection.outbound.get(self.stream)
        if outbound is not None:
            self.connection.send_headers(outbound, block, True)
        self.over()

    def fail(self, code: Code, details: str) -> None:
        """End the call with ``code``: trailers only, or trailers after what was sent."""
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
        if not self.connection.closed:
            fields: list[Header] = []
            if not self.answered:
                fields += ((b":status", b"200"), (b"content-type", b"application/grpc"))
                fields += _metadata_fields(self.context.initial)
            fields += ((b"grpc-status", b"%d" % code.value[0]), (b"grpc-message", grpc_message(details)))
            fields += _metadata_fields(self.context.trailers)
            outbound = self.connection.outbound.get(self.stream)
            if outbound is None:
                self.connection.write_headers(self.stream, encode_block(fields), True)
            else:
                self.connection.send_headers(outbound, encode_block(fields), True)
            if not self.request_ended and self.stream not in self.connection.outbound:
                self.connection.reset(self.stream, NO_ERROR)  # stop the client sending (RFC 9113 8.1)
        self.over()

    def failed(self, exc: Exception) -> None:
        if isinstance(exc, Aborted):
            self.fail(exc.code, exc.details)
            return
        logger.exception("gRPC %s failed", self.method)
        self.context.set_code(status_code("UNKNOWN"))
        self.fail(status_code("UNKNOWN"), f"Unexpected {type(exc)}: {exc}")

    def unimplemented(self) -> None:
        self.fail(status_code("UNIMPLEMENTED"), "Method not found!")

    def expired(self) -> None:
        self.timer = None
        self.fail(status_code("DEADLINE_EXCEEDED"), "Deadline Exceeded")

    def cancel(self) -> None:
        """The client reset the stream or left, or the server stops: no answer."""
        if self.task is not None:
            self.task.cancel()
        self.connection.drop(self.stream)
        self.over()

    def over(self) -> None:
        if self.owed:  # never to be read: the connection's window is the client's again
            owed, self.owed = self.owed, 0
            self.connection.credit(owed)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        connection = self.connection
        if connection.calls.get(self.stream) is self:
            connection.call_over(self.stream)
            connection.server.call_over(self)


async def _deserialized(messages: AsyncIterator[bytes], deserialize: Any) -> AsyncIterator[Any]:
    async for message in messages:
        yield message if deserialize is None else deserialize(message)


def _metadata_fields(metadata: Metadata) -> list[Header]:
    """Trailing metadata as header fields: ``-bin`` values base64 without padding, as gRPC sends."""
    fields: list[Header] = []
    for key, value in metadata:
        name = key.lower().encode("latin-1")
        if isinstance(value, bytes):
            fields.append((name, base64.b64encode(value).rstrip(b"=")))
        else:
            fields.append((name, value.encode("latin-1")))
    return fields
