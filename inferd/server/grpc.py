"""Build one process's gRPC server: the V2 servicer plus the dialect's own services, on inferd's own
HTTP/2 (``grpc_server = "inferd"``, the default: `inferd.server.grpc_native`) or on grpc.aio
(``"grpcio"``). Both get the same servicers, the same `Registrar` and the same interceptors.

grpcio (about 8 MiB of a worker) is imported only for grpc.aio, for the interceptors (bearer tokens,
spans: they subclass grpc.aio's) and by a dialect's generated gRPC code: the native server serving
V2 alone runs without it (issue 26)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from inferd.core import tracing
from inferd.protocols.grpc_handlers import stream_stream, unary_unary
from inferd.protocols.v2.grpc import HEALTH_METHODS, add_to_server
from inferd.server.app import Runtime
from inferd.server.auth import Tokens, tokens_of
from inferd.server.grpc_requests import Registrar


class GrpcServer(Protocol):
    """What the engine calls of a gRPC server, whichever it is."""

    def add_insecure_port(self, address: str) -> int: ...
    async def start(self) -> None: ...
    async def stop(self, grace: float | None) -> Any: ...


def create_grpc_server(runtime: Runtime, shared_port: bool = False) -> GrpcServer:
    """The server, its port not yet bound. ``shared_port``: the port is reserved by a supervisor
    (`inferd.engines.sockets.reserve_port`) for its workers, and joined with SO_REUSEPORT; otherwise
    it is bound without, so no other server (another inferd on the same port) can join it."""
    settings = runtime.settings
    receive, send = settings.grpc_limits
    tokens = tokens_of(settings)
    interceptors = _interceptors(tokens)
    server: Any
    make_handler: Callable[..., Any]
    make_stream: Callable[..., Any] = stream_stream
    if settings.grpc_server == "inferd":
        from inferd.server.grpc_native import NativeGrpcServer

        server, make_handler = (
            NativeGrpcServer(interceptors, receive, send, shared_port, settings.grpc_flood_limit),
            unary_unary,
        )
    else:
        import grpc

        make_handler, make_stream = grpc.unary_unary_rpc_method_handler, grpc.stream_stream_rpc_method_handler
        server = grpc.aio.server(
            interceptors=interceptors or None,
            options=[
                ("grpc.max_send_message_length", send),
                ("grpc.max_receive_message_length", receive),
                ("grpc.so_reuseport", int(shared_port)),
            ],
        )
    registrar = Registrar(server)  # malformed requests of every service get INVALID_ARGUMENT
    add_to_server(registrar, runtime.dataplane, make_handler, make_stream)
    for add in runtime.dialect.grpc_services(runtime.dataplane, runtime.dialect_settings):
        add(registrar)
    server_: GrpcServer = server
    return server_


def _interceptors(tokens: Tokens | None) -> list[Any]:
    """Spans first, then bearer tokens; none (and no grpcio import) when neither is configured."""
    if tracing.tracer is None and tokens is None:
        return []
    from inferd.server.grpc_interceptors import GrpcBearerAuth, TracedRpcs

    interceptors: list[Any] = [] if tracing.tracer is None else [TracedRpcs(tracing.tracer)]
    if tokens is not None:
        interceptors.append(GrpcBearerAuth(tokens, HEALTH_METHODS))
    return interceptors
