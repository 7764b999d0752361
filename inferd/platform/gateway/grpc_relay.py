"""The gRPC relay's streams: each call of a client connection paired with a stream on a pooled
HTTP/2 connection to its service, frames copied between the two.

A `Call` carries one client stream: its request's header block (re-encoded, ``:authority`` the
service's) and DATA go upstream as they arrive, the answer's headers, DATA and trailers come back the
same way, whether the method is unary or streams either way; messages are never parsed, but for the
5-byte prefix of each request message, whose length is held to the gateway's limit (`MessageSizes`).
A `ShadowCall` sends a finished request's copy to a shadow and drops its answer. An `UpstreamPool`
keeps the HTTP/2 connections to one service's gRPC port, opening another when one is full or going
away; calls that arrive while it connects wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from inferd.platform.gateway import metrics
from inferd.protocols.grpc_status import StatusCode
from inferd.protocols.h2.connection import H2Connection
from inferd.protocols.h2.frames import CANCEL, INTERNAL_ERROR, LAST_STREAM_ID
from inferd.protocols.h2.grpc_wire import MessageSizes, status_block
from inferd.protocols.h2.hpack_out import Header, field
from inferd.protocols.h2.sending import Corker, Inbound, Outbound
from inferd.protocols.h2.server import ServerConnection

logger = logging.getLogger("inferd.gateway")


class GrpcGateway(Protocol):
    """What the relay asks of the gateway (`grpc_proxy.GrpcGateway`): where calls go, its limits,
    and to hear of calls and copies ending."""

    corker: Corker
    clients: set[ClientConnection]
    max_message_size: int
    flood_limit: int
    max_shadow_body: int
    shadow_timeout: float

    def start_call(self, client: ClientConnection, stream: int, headers: list[Header], end: bool) -> None: ...
    def call_over(self, call: Call) -> None: ...
    def send_shadow(self, call: Call, body: bytes) -> None: ...
    def shadow_dropped(self, call: Call) -> None: ...
    def shadow_over(self, copy: ShadowCall) -> None: ...


class Sink(Protocol):
    """What an upstream stream's events go to: a `Call` or a `ShadowCall`."""

    done: bool

    def opened(self, connection: UpstreamConnection) -> None: ...
    def response_headers(self, headers: list[Header], end: bool) -> None: ...
    def response_data(self, data: bytes, flow: int, end: bool) -> None: ...
    def upstream_reset(self, code: int) -> None: ...
    def upstream_failed(self) -> None: ...


class ClientConnection(ServerConnection["Call"]):
    """A client's connection to the gateway; each new stream is a call for `GrpcGateway.start_call`."""

    def __init__(self, gateway: GrpcGateway) -> None:
        super().__init__(gateway.corker, gateway.flood_limit)
        self.gateway = gateway

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.gateway.clients.add(self)

    @property
    def address(self) -> str | None:
        """The client's address (for the back-off after wrong tokens)."""
        peer = self.transport.get_extra_info("peername") if self.transport is not None else None
        return str(peer[0]) if peer else None

    def on_headers(self, stream: int, headers: list[Header], end: bool) -> None:
        call = self.calls.get(stream)
        if call is not None:
            call.request_headers(headers, end)
        elif self.opens(stream):
            self.gateway.start_call(self, stream, headers, end)

    def on_lost(self) -> None:
        super().on_lost()
        self.gateway.clients.discard(self)

    def answer(self, stream: int, code: StatusCode, message: str) -> None:
        """A trailers-only answer of the gateway's own: gRPC status ``code`` and ``message``."""
        self.write_headers(stream, status_block(code.value[0], message), True)


class UpstreamConnection(H2Connection):
    """The gateway's connection to one service's gRPC port, carrying many calls."""

    server_side = False

    def __init__(self, pool: UpstreamPool) -> None:
        super().__init__(pool.corker)
        self.pool = pool
        self.calls: dict[int, Sink] = {}
        self.next_stream = 1
        self.going_away = False

    def can_open(self) -> bool:
        return (
            not self.closed
            and not self.going_away
            and len(self.calls) < self.peer_max_streams
            and self.next_stream < LAST_STREAM_ID
        )

    def is_idle(self, stream: int) -> bool:
        return stream >= self.next_stream or not stream & 1  # no server push: even streams never open

    def open_stream(self, sink: Sink, block: bytes, end: bool) -> tuple[int, Outbound, Inbound]:
        stream = self.next_stream
        self.next_stream += 2
        self.calls[stream] = sink
        outbound = self.open_outbound(stream)
        self.write_headers(stream, self.pool.authority + block, end)
        if end:
            self.outbound.pop(stream, None)
        return stream, outbound, Inbound(self, stream)

    def on_headers(self, stream: int, headers: list[Header], end: bool) -> None:
        sink = self.calls.get(stream)
        if sink is not None:
            sink.response_headers(headers, end)

    def on_data(self, stream: int, data: memoryview, flow: int, end: bool) -> None:
        sink = self.calls.get(stream)
        if sink is None:
            self.credit(flow)
        else:
            sink.response_data(bytes(data), flow, end)  # queued: a copy, not the read it is part of

    def on_reset(self, stream: int, code: int) -> None:
        sink = self.calls.pop(stream, None)
        if sink is not None:
            sink.upstream_reset(code)

    def on_goaway(self, last_stream: int, code: int) -> None:
        """The service stops taking calls: those it did not take fail as unreachable; the
        connection closes once the others are over."""
        self.going_away = True
        self.pool.forget(self)
        for stream, sink in list(self.calls.items()):
            if stream > last_stream:
                del self.calls[stream]
                sink.upstream_failed()
        if not self.calls:
            self.close()

    def on_lost(self) -> None:
        self.pool.forget(self)
        calls, self.calls = self.calls, {}
        for sink in calls.values():
            sink.upstream_failed()

    def call_over(self, stream: int) -> None:
        self.calls.pop(stream, None)
        if self.going_away and not self.calls:
            self.close()


class UpstreamPool:
    """The HTTP/2 connections to one service's gRPC port (``host:port``)."""

    def __init__(self, address: str, corker: Corker, connect_timeout: float) -> None:
        host, _, port = address.rpartition(":")
        self.address, self.host, self.port = address, host.strip("[]"), int(port)
        self.corker, self.connect_timeout = corker, connect_timeout
        self.authority = field(b":authority", address.encode())
        self.connections: list[UpstreamConnection] = []
        self.waiting: list[Sink] = []
        self.connecting: asyncio.Task[None] | None = None

    def open(self, sink: Sink) -> None:
        """Open ``sink``'s stream on a connection with room, or once a new one is connected."""
        for connection in self.connections:
            if connection.can_open():
                sink.opened(connection)
                return
        self.waiting.append(sink)
        if self.connecting is None:
            self.connecting = self.corker.loop.create_task(self.connect())

    async def connect(self) -> None:
        loop = self.corker.loop
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: UpstreamConnection(self), self.host, self.port),
                self.connect_timeout,
            )
        except (OSError, asyncio.TimeoutError) as error:
            logger.warning("gRPC: cannot connect to %s: %s", self.address, error)
            connection = None
        self.connecting = None
        waiting, self.waiting = self.waiting, []
        if connection is not None:
            self.connections.append(connection)
        for sink in waiting:
            if sink.done:
                continue
            if connection is None:
                sink.upstream_failed()
            else:
                self.open(sink)

    def forget(self, connection: UpstreamConnection) -> None:
        if connection in self.connections:
            self.connections.remove(connection)

    def close(self) -> None:
        if self.connecting is not None:
            self.connecting.cancel()
        for connection in list(self.connections):
            connection.abort()
        self.connections.clear()


class Call:
    """One client stream relayed to one service stream."""

    __slots__ = (
        "block",
        "client",
        "connection",
        "copied",
        "copy",
        "done",
        "early",
        "endpoint",
        "gateway",
        "in_client",
        "in_upstream",
        "out_client",
        "out_upstream",
        "request_ended",
        "response_started",
        "shadow",
        "shadow_address",
        "shadow_block",
        "sizes",
        "stream",
        "upstream",
        "upstream_stream",
    )

    def __init__(
        self,
        gateway: GrpcGateway,
        client: ClientConnection,
        stream: int,
        endpoint: str,
        upstream: str,
        block: bytes,
        end: bool,
        shadow: tuple[str, str] | None,
    ) -> None:
        self.gateway, self.client, self.stream = gateway, client, stream
        self.endpoint, self.upstream, self.block = endpoint, upstream, block
        #: The shadow upstream and its gRPC address, until the copy is sent or given up.
        self.shadow: str | None = None
        self.shadow_address = ""
        #: The header block the shadow copy is sent with (its service's token in it).
        self.shadow_block = block
        if shadow is not None:
            self.shadow, self.shadow_address = shadow
        self.copy: list[bytes] | None = [] if shadow is not None else None
        self.copied = 0
        self.in_client = Inbound(client, stream)
        self.in_client.ended = self.request_ended = end
        self.out_client = client.open_outbound(stream)
        self.connection: UpstreamConnection | None = None
        self.upstream_stream = 0
        self.out_upstream: Outbound | None = None
        self.in_upstream: Inbound | None = None
        #: The request's DATA (and trailers: flow -1) received before the upstream stream opened.
        self.early: list[tuple[bytes, bool, int]] = []
        self.sizes = MessageSizes(gateway.max_message_size)
        self.response_started = False
        self.done = False

    # The request, client → service
    def opened(self, connection: UpstreamConnection) -> None:
        end = self.request_ended and not self.early
        self.upstream_stream, self.out_upstream, self.in_upstream = connection.open_stream(
            self, self.block, end
        )
        self.connection = connection
        early, self.early = self.early, []
        for data, ended, flow in early:
            self.forward(data, ended, flow)

    def request_data(self, view: memoryview, flow: int, end: bool) -> None:
        data = bytes(view)  # queued: a copy, not the read it is part of
        too_large = self.sizes.feed(data)
        if too_large is not None:
            self.in_client.credit(flow)
            self.refuse_large(too_large)
            return
        if end:
            self.request_ended = self.in_client.ended = True
        copy = self.copy
        if copy is not None:
            copy.append(data)
            self.copied += len(data)
            if self.copied > self.gateway.max_shadow_body:
                self.copy = None
                self.gateway.shadow_dropped(self)
        if self.out_upstream is None:
            self.early.append((data, end, flow))
        else:
            self.forward(data, end, flow)
        if end and self.copy is not None:
            self.gateway.send_shadow(self, b"".join(self.copy))
            self.copy = None

    def request_headers(self, headers: list[Header], end: bool) -> None:
        """Trailers of a request (gRPC clients send none, but HTTP/2 allows them)."""
        if end:
            self.request_ended = self.in_client.ended = True
        block = b"".join(field(name, value) for name, value in headers)
        if self.out_upstream is None:
            self.early.append((block, end, -1))
        else:
            self.forward(block, end, -1)

    def forward(self, data: bytes, end: bool, flow: int) -> None:
        connection, outbound = self.connection, self.out_upstream
        assert connection is not None and outbound is not None
        if flow < 0:
            connection.send_headers(outbound, data, end)
        else:
            connection.send_data(outbound, data, end, self.in_client, flow)

    def refuse_large(self, length: int) -> None:
        limit = self.gateway.max_message_size
        message = f"Received message larger than max ({length} vs. {limit})"
        if self.connection is not None:
            self.connection.reset(self.upstream_stream, CANCEL)
        if self.response_started:
            self.client.reset(self.stream, INTERNAL_ERROR)
        else:
            self.client.drop(self.stream)
            self.client.answer(self.stream, StatusCode.RESOURCE_EXHAUSTED, message)
        self.over()

    # The answer, service → client
    def response_headers(self, headers: list[Header], end: bool) -> None:
        self.response_started = True
        block = b"".join([field(name, value) for name, value in headers])
        self.client.send_headers(self.out_client, block, end)
        if end:
            self.response_over()

    def response_data(self, data: bytes, flow: int, end: bool) -> None:
        self.client.send_data(self.out_client, data, end, self.in_upstream, flow)
        if end:
            self.response_over()

    def response_over(self) -> None:
        if not self.request_ended and self.connection is not None:
            self.connection.reset(self.upstream_stream, CANCEL)
        self.over()

    # Endings
    def cancel(self) -> None:
        """The client reset the stream or left: the service's stream is cancelled."""
        if self.connection is not None:
            self.connection.reset(self.upstream_stream, CANCEL)
        self.client.drop(self.stream)
        self.over()

    def upstream_reset(self, code: int) -> None:
        self.client.reset(self.stream, code)
        self.over()

    def upstream_failed(self) -> None:
        """The service could not be reached, or its connection broke before the answer ended."""
        if self.response_started:
            self.client.reset(self.stream, INTERNAL_ERROR)
        else:
            logger.warning("endpoint '%s': its gRPC service %s is unavailable", self.endpoint, self.upstream)
            self.client.drop(self.stream)
            self.client.answer(
                self.stream, StatusCode.UNAVAILABLE, f"endpoint '{self.endpoint}': its service is unavailable"
            )
        self.over()

    def over(self) -> None:
        if self.done:
            return
        self.done = True
        if self.connection is not None:
            self.connection.call_over(self.upstream_stream)
        self.client.call_over(self.stream)
        self.gateway.call_over(self)


class ShadowCall:
    """A copy of a finished request (``block`` and ``body``) sent to a shadow; its answer is read
    and dropped, its outcome counted."""

    __slots__ = (
        "block",
        "body",
        "connection",
        "done",
        "endpoint",
        "gateway",
        "inbound",
        "shadow",
        "status",
        "stream",
        "timer",
    )

    def __init__(self, gateway: GrpcGateway, endpoint: str, shadow: str, block: bytes, body: bytes) -> None:
        self.gateway, self.endpoint, self.shadow = gateway, endpoint, shadow
        self.block, self.body = block, body
        self.connection: UpstreamConnection | None = None
        self.inbound: Inbound | None = None
        self.stream = 0
        self.status = "error"
        self.done = False
        self.timer = gateway.corker.loop.call_later(gateway.shadow_timeout, self.timed_out)

    def opened(self, connection: UpstreamConnection) -> None:
        self.connection = connection
        self.stream, outbound, self.inbound = connection.open_stream(self, self.block, not self.body)
        if self.body:
            connection.send_data(outbound, self.body, True, None, 0)

    def response_headers(self, headers: list[Header], end: bool) -> None:
        for name, value in headers:
            if name == b":status":
                self.status = value.decode()
        if end:
            self.over(self.status)

    def response_data(self, data: bytes, flow: int, end: bool) -> None:
        assert self.inbound is not None
        self.inbound.credit(flow)
        if end:
            self.over(self.status)

    def upstream_reset(self, code: int) -> None:
        self.over("error")

    def upstream_failed(self) -> None:
        self.over("error")

    def timed_out(self) -> None:
        if self.connection is not None and not self.done:
            self.connection.reset(self.stream, CANCEL)
        self.over("error")

    def over(self, outcome: str) -> None:
        if self.done:
            return
        self.done = True
        self.timer.cancel()
        if self.connection is not None:
            self.connection.call_over(self.stream)
        self.gateway.shadow_over(self)
        metrics.count_shadow(self.endpoint, outcome)
