"""The gateway's gRPC side: every call of any service (V2's ``inference.GRPCInferenceService``,
Seldon's ``seldon.protos.Seldon``...), unary or streaming, relayed as HTTP/2 frames to one of its
endpoint's services.

Which endpoint a call is for: its ``inferd-endpoint`` metadata, or, without it, the one endpoint
when the table holds exactly one. The service is picked by the endpoint's weights from the same
`EndpointTable` as HTTP requests, and the call is counted in flight under that service's name, so
`EndpointTable.drained` waits for gRPC calls too. An endpoint's shadow gets a copy of its share of
the calls, as of HTTP requests: once a call's request has ended (whole, at most
``max_shadow_body`` bytes, at most ``max_shadow_inflight`` copies in flight, else counted as
dropped), its header block and messages go to the shadow's gRPC port and the answer is dropped, so
the copy never delays the caller's answer; `metrics.count_shadow` counts each by the HTTP status
of its answer (``error`` when it had none).

The gateway does not terminate gRPC: it relays HTTP/2 (`grpc_relay`, `inferd.protocols.h2`), one process, no
message ever parsed. A call's header block goes upstream re-encoded, but for ``authorization``
(checked against ``tokens``, then replaced by the token of the service the call goes to, or
``upstream_token``) and
``:authority`` (the service's address); its DATA frames, the answer's headers, DATA and trailers
pass as they are, over pooled HTTP/2 connections to each service (many calls on one). Relaying
costs far less than a grpc.aio server and client per call (bench/gateway_grpc.py). The gateway's
own answers are trailers-only gRPC statuses: NOT_FOUND for an unknown endpoint, UNAVAILABLE naming
the endpoint when no service has weight or its service cannot be reached (never its address),
UNAUTHENTICATED without a token when tokens are set, RESOURCE_EXHAUSTED for a request message over
``max_message_size``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from inferd.engines.sockets import bind_http
from inferd.platform.gateway import metrics
from inferd.platform.gateway.grpc_relay import Call, ClientConnection, ShadowCall, UpstreamPool
from inferd.platform.gateway.table import EndpointTable, Split
from inferd.protocols.grpc_status import StatusCode
from inferd.protocols.h2.connection import FLOOD_LIMIT
from inferd.protocols.h2.hpack_out import Header, encode_block
from inferd.protocols.h2.sending import Corker
from inferd.protocols.status import status_of
from inferd.server.auth import Tokens

logger = logging.getLogger("inferd.gateway")

#: The metadata key naming the endpoint a call is for.
ENDPOINT_KEY = b"inferd-endpoint"
#: Request headers not passed on as they came: the gateway's credentials and the address it was called at.
REPLACED = frozenset({b"authorization", b":authority", b"host"})


class GrpcGateway:
    """Routes each call of a client connection to a service of its endpoint in ``table``."""

    def __init__(
        self,
        table: EndpointTable,
        corker: Corker,
        *,
        tokens: Tokens | None = None,
        upstream_token: str | None = None,
        max_message_size: int = 64 * 1024 * 1024,
        flood_limit: int = FLOOD_LIMIT,
        max_shadow_inflight: int = 64,
        max_shadow_body: int = 4 * 1024 * 1024,
        shadow_timeout: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.table, self.corker, self.tokens = table, corker, tokens
        self.authorization = None if upstream_token is None else f"Bearer {upstream_token}".encode()
        self.max_message_size, self.flood_limit = max_message_size, flood_limit
        self.max_shadow_inflight, self.max_shadow_body = max_shadow_inflight, max_shadow_body
        self.shadow_timeout, self.connect_timeout = shadow_timeout, connect_timeout
        self.pools: dict[str, UpstreamPool] = {}
        self.clients: set[ClientConnection] = set()
        self.shadows: set[ShadowCall] = set()

    def start_call(self, client: ClientConnection, stream: int, headers: list[Header], end: bool) -> None:
        """A new call: refused with the gateway's own status, or relayed to a service."""
        kept: list[Header] = []
        authorization = endpoint = None
        for name, value in headers:
            if name in REPLACED:
                if name == b"authorization":
                    authorization = value
                continue
            if name == ENDPOINT_KEY:
                endpoint = value.decode("utf-8", "replace")
            kept.append((name, value))
        if self.tokens is not None:
            refused = self.tokens.check(authorization, client.address)
            if refused is not None:  # past its free wrong tokens, a client is refused as a 429 is
                client.answer(stream, StatusCode[status_of(refused).grpc_name], refused.message)
                return
        self.route(client, stream, endpoint, kept, end)

    def block_for(self, split: Split, upstream: str, kept: list[Header]) -> bytes:
        """The call's header block for ``upstream``: with the ``Authorization`` its service takes
        (`Split.tokens`), else the gateway's ``upstream_token``'s, else none (the client's never)."""
        authorization = split.tokens.get(upstream, self.authorization)
        return encode_block(kept if authorization is None else [*kept, (b"authorization", authorization)])

    def route(
        self, client: ClientConnection, stream: int, name: str | None, kept: list[Header], end: bool
    ) -> None:
        if name is None:
            names = self.table.names()
            if len(names) != 1:
                client.answer(
                    stream,
                    StatusCode.NOT_FOUND,
                    f"name the endpoint in the '{ENDPOINT_KEY.decode()}' metadata (this gateway "
                    f"serves {len(names)} endpoints)",
                )
                return
            name = names[0]
        picked = self.table.begin(name)
        if picked is None:
            client.answer(stream, StatusCode.NOT_FOUND, f"no endpoint named '{name}'")
            return
        split, upstream, shadow = picked
        address = None if upstream is None else split.grpc.get(upstream)
        shadow_route = None
        if shadow is not None:
            shadow_address = split.grpc.get(shadow)
            if shadow_address is None or address is None:
                self.table.end(shadow)
            else:
                shadow_route = (shadow, shadow_address)
        if upstream is None or address is None:
            if upstream is not None:
                self.table.end(upstream)
            why = " routes to no service with weight" if upstream is None else ": its service serves no gRPC"
            client.answer(stream, StatusCode.UNAVAILABLE, f"endpoint '{name}'{why}")
            return
        block = self.block_for(split, upstream, kept)
        call = client.calls[stream] = Call(self, client, stream, name, upstream, block, end, shadow_route)
        if shadow_route is not None:
            call.shadow_block = self.block_for(split, shadow_route[0], kept)
        if end and shadow_route is not None:
            self.send_shadow(call, b"")
        self.pool(address).open(call)

    def pool(self, address: str) -> UpstreamPool:
        pool = self.pools.get(address)
        if pool is None:
            pool = self.pools[address] = UpstreamPool(address, self.corker, self.connect_timeout)
        return pool

    def call_over(self, call: Call) -> None:
        self.table.end(call.upstream)
        if call.shadow is not None:  # the request never ended: no copy
            self.table.end(call.shadow)
            call.shadow = None

    # Shadow copies
    def send_shadow(self, call: Call, body: bytes) -> None:
        shadow, call.shadow, call.copy = call.shadow, None, None
        assert shadow is not None
        if len(self.shadows) >= self.max_shadow_inflight:
            metrics.count_dropped(call.endpoint)
            self.table.end(shadow)
            return
        copy = ShadowCall(self, call.endpoint, shadow, call.shadow_block, body)
        self.shadows.add(copy)
        self.pool(call.shadow_address).open(copy)

    def shadow_dropped(self, call: Call) -> None:
        """``call``'s request outgrew what a copy may hold."""
        shadow, call.shadow = call.shadow, None
        if shadow is not None:
            metrics.count_dropped(call.endpoint)
            self.table.end(shadow)

    def shadow_over(self, copy: ShadowCall) -> None:
        self.shadows.discard(copy)
        self.table.end(copy.shadow)

    def close(self) -> None:
        """Close every connection and cancel the shadow copies in flight."""
        for client in list(self.clients):
            client.abort()
        for pool in self.pools.values():
            pool.close()
        for copy in list(self.shadows):
            copy.upstream_failed()


class GrpcGatewayServer:
    """A running gRPC gateway: its port and `stop`."""

    def __init__(self, server: asyncio.Server, gateway: GrpcGateway, port: int) -> None:
        self.server, self.gateway, self.port = server, gateway, port

    async def stop(self, grace: float = 30.0) -> None:
        """Stop accepting (GOAWAY to every client), let the calls in flight finish within ``grace``
        seconds, then close every connection."""
        self.server.close()
        for client in list(self.gateway.clients):
            client.stop_taking()
        deadline = time.monotonic() + grace
        while any(client.calls for client in self.gateway.clients) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.gateway.close()


async def serve_grpc_gateway(
    table: EndpointTable,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tokens: Tokens | None = None,
    upstream_token: str | None = None,
    max_message_size: int = 64 * 1024 * 1024,
    flood_limit: int = FLOOD_LIMIT,
) -> GrpcGatewayServer:
    """Serve the endpoints of ``table`` over gRPC on ``host:port`` (0: a free port) in this event
    loop. ``tokens``: every call needs ``authorization: Bearer <token>`` metadata. Request messages
    larger than ``max_message_size`` bytes are refused (RESOURCE_EXHAUSTED); answers are not limited.
    A client past ``flood_limit`` cheap frames a second is cut (`inferd.protocols.h2.flood`)."""
    loop = asyncio.get_running_loop()
    gateway = GrpcGateway(
        table,
        Corker(loop),
        tokens=tokens,
        upstream_token=upstream_token,
        max_message_size=max_message_size,
        flood_limit=flood_limit,
    )
    sock = bind_http(host, port)
    server = await loop.create_server(lambda: ClientConnection(gateway), sock=sock)
    return GrpcGatewayServer(server, gateway, sock.getsockname()[1])
