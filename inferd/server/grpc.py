"""Build one process's gRPC server: the V2 servicer plus the dialect's own services, on inferd's own
HTTP/2 (``grpc_server = "inferd"``, the default: `inferd.server.grpc_native`) or on grpc.aio
(``"grpcio"``). Both get the same servicers, the same `Registrar` and the same interceptors."""

from __future__ import annotations

from typing import Any, Protocol

import grpc

from inferd.core import tracing
from inferd.protocols.v2.grpc import HEALTH_METHODS, add_to_server
from inferd.server.app import Runtime
from inferd.server.auth import tokens_of
from inferd.server.grpc_interceptors import GrpcBearerAuth, TracedRpcs
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
    interceptors: list[Any] = [] if tracing.tracer is None else [TracedRpcs(tracing.tracer)]  # span first
    if tokens is not None:
        interceptors.append(GrpcBearerAuth(tokens, HEALTH_METHODS))
    server: Any
    if settings.grpc_server == "inferd":
        from inferd.server.grpc_native import NativeGrpcServer

        server = NativeGrpcServer(interceptors, receive, send, shared_port)
    else:
        server = grpc.aio.server(
            interceptors=interceptors or None,
            options=[
                ("grpc.max_send_message_length", send),
                ("grpc.max_receive_message_length", receive),
                ("grpc.so_reuseport", int(shared_port)),
            ],
        )
    registrar = Registrar(server)  # malformed requests of every service get INVALID_ARGUMENT
    add_to_server(registrar, runtime.dataplane)
    for add in runtime.dialect.grpc_services(runtime.dataplane, runtime.dialect_settings):
        add(registrar)
    server_: GrpcServer = server
    return server_
