"""The gateway's gRPC side: every unary call of any service (V2's ``inference.GRPCInferenceService``,
Seldon's ``seldon.protos.Seldon``...) forwarded as raw bytes to one of its endpoint's services.

Which endpoint a call is for: its ``inferd-endpoint`` metadata, or, without it, the one endpoint
when the table holds exactly one. The service is picked by the endpoint's weights from the same
`EndpointTable` as HTTP requests, and the call is counted in flight under that service's name, so
`EndpointTable.drained` waits for gRPC calls too. Shadow copies are not made of gRPC calls.

The request and answer messages are never parsed (identity serializers): the method, metadata
(but ``authorization``, replaced by ``upstream_token`` when there is one, and gRPC's own keys),
the deadline and the message go upstream over one cached channel per service; the answer's
metadata, status code and details come back as they are. The gateway's own answers: NOT_FOUND for
an unknown endpoint, UNAVAILABLE naming the endpoint when no service has weight or its service
cannot be reached (never its address), UNAUTHENTICATED without a token when tokens are set, and
UNIMPLEMENTED for the streaming methods it knows of (`STREAMING`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import grpc

from inferd.engines.sockets import listen_errors
from inferd.platform.gateway.table import EndpointTable
from inferd.server.auth import Tokens
from inferd.server.grpc_interceptors import GrpcBearerAuth

logger = logging.getLogger("inferd.gateway")

#: The metadata key naming the endpoint a call is for.
ENDPOINT_KEY = "inferd-endpoint"
#: Methods known to stream (not proxied: UNIMPLEMENTED); any other method is taken as unary.
STREAMING = frozenset({"/inference.GRPCInferenceService/ModelStreamInfer"})
#: Metadata that describes the call to the gateway, not to the service.
DROPPED = frozenset({"authorization", "user-agent", "te", "content-type", "host"})
#: Upstream channels: no size limit of their own (the gateway's server has it), and a restarted
#: service is tried again within a second instead of gRPC's backoff of up to two minutes.
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)
Metadata = Sequence[tuple[str, str | bytes]]
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


class GrpcGateway(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpcio ships no hints
    """The generic handler of every method, forwarding to the endpoints of ``table``."""

    def __init__(self, table: EndpointTable, upstream_token: str | None = None) -> None:
        self.table = table
        self.authorization = None if upstream_token is None else f"Bearer {upstream_token}"
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.callables: dict[tuple[str, str], Any] = {}

    def service(self, details: Any) -> Any:
        method: str = details.method
        if method in STREAMING:
            return None
        return grpc.unary_unary_rpc_method_handler(functools.partial(self.call, method))

    async def call(self, method: str, request: bytes, context: Any) -> bytes:
        metadata: Metadata = context.invocation_metadata() or ()
        name = self.endpoint_of(metadata)
        if name is None:
            await _abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"name the endpoint in the '{ENDPOINT_KEY}' metadata (this gateway serves "
                f"{len(self.table.names())} endpoints)",
            )
        picked = self.table.begin(name, mirror=False)
        if picked is None:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"no endpoint named '{name}'")
        split, upstream, _ = picked
        if upstream is None:
            await _abort(context, UNAVAILABLE, f"endpoint '{name}' routes to no service with weight")
        try:
            address = split.grpc.get(upstream)
            if address is None:
                await _abort(context, UNAVAILABLE, f"endpoint '{name}': its service serves no gRPC")
            return await self.forward(name, method, address, request, metadata, context)
        finally:
            self.table.end(upstream)

    def endpoint_of(self, metadata: Metadata) -> str | None:
        for key, value in metadata:
            if key == ENDPOINT_KEY:
                return value if isinstance(value, str) else value.decode("utf-8", "replace")
        names = self.table.names()
        return names[0] if len(names) == 1 else None

    async def forward(
        self, name: str, method: str, address: str, request: bytes, metadata: Metadata, context: Any
    ) -> bytes:
        call = self.callable(address, method)(
            request, metadata=self.outgoing(metadata), timeout=context.time_remaining()
        )
        try:
            answer: bytes = await call
        except grpc.aio.AioRpcError as error:
            await self.pass_error(name, address, error, context)
        initial = await call.initial_metadata()
        if initial:
            await context.send_initial_metadata(_user_keys(initial))
        trailing = await call.trailing_metadata()
        if trailing:
            context.set_trailing_metadata(_user_keys(trailing))
        return answer

    def outgoing(self, metadata: Metadata) -> list[tuple[str, str | bytes]]:
        kept = [(key, value) for key, value in metadata if key not in DROPPED and not _reserved(key)]
        if self.authorization is not None:
            kept.append(("authorization", self.authorization))
        return kept

    async def pass_error(
        self, name: str, address: str, error: grpc.aio.AioRpcError, context: Any
    ) -> NoReturn:
        """The service's own status as it sent it; a failure to reach it (UNAVAILABLE while its
        channel is not connected) as UNAVAILABLE naming the endpoint (its address only in the log)."""
        code, details = error.code(), error.details() or ""
        connected = self.channels[address].get_state() is grpc.ChannelConnectivity.READY
        if code is UNAVAILABLE and not connected:
            logger.warning("endpoint '%s': gRPC call to %s failed: %s", name, address, details)
            await _abort(context, UNAVAILABLE, f"endpoint '{name}': its service is unavailable")
        await _abort(context, code, details, _user_keys(error.trailing_metadata() or ()))

    def callable(self, address: str, method: str) -> Any:
        key = (address, method)
        found = self.callables.get(key)
        if found is None:
            channel = self.channels.get(address)
            if channel is None:
                channel = self.channels[address] = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
            found = self.callables[key] = channel.unary_unary(method)
        return found

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()
        self.channels.clear()
        self.callables.clear()


async def _abort(context: Any, code: grpc.StatusCode, details: str, trailing: Metadata = ()) -> NoReturn:
    """End the call with ``code`` (``context.abort`` raises)."""
    await context.abort(code, details, trailing)
    raise AssertionError("unreachable: abort raises")


def _reserved(key: str) -> bool:
    return key.startswith((":", "grpc-"))


def _user_keys(metadata: Iterable[tuple[str, str | bytes]]) -> tuple[tuple[str, str | bytes], ...]:
    return tuple((key, value) for key, value in metadata if not _reserved(key) and key not in DROPPED)


class GrpcGatewayServer:
    """A running gRPC gateway: its port and `stop`."""

    def __init__(self, server: grpc.aio.Server, gateway: GrpcGateway, port: int) -> None:
        self.server, self.gateway, self.port = server, gateway, port

    async def stop(self, grace: float = 30.0) -> None:
        """Stop accepting, let the calls in flight finish within ``grace`` seconds, close the
        upstream channels."""
        await self.server.stop(grace)
        await self.gateway.close()


async def serve_grpc_gateway(
    table: EndpointTable,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tokens: Tokens | None = None,
    upstream_token: str | None = None,
    max_message_size: int = 64 * 1024 * 1024,
) -> GrpcGatewayServer:
    """Serve the endpoints of ``table`` over gRPC on ``host:port`` (0: a free port) in this event
    loop. ``tokens``: every call needs ``authorization: Bearer <token>`` metadata. Requests larger
    than ``max_message_size`` bytes are refused (RESOURCE_EXHAUSTED); answers are not limited."""
    gateway = GrpcGateway(table, upstream_token)
    server = grpc.aio.server(
        interceptors=[GrpcBearerAuth(tokens, ())] if tokens is not None else None,
        options=[
            ("grpc.max_receive_message_length", max_message_size),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers((gateway,))
    with listen_errors(host, port):
        bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    return GrpcGatewayServer(server, gateway, bound)
