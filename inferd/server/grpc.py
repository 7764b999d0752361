"""Build one process's grpc.aio server: the V2 servicer plus the dialect's own services."""

from __future__ import annotations

import grpc

from inferd.core import tracing
from inferd.protocols.v2.grpc import HEALTH_METHODS, add_to_server
from inferd.server.app import Runtime
from inferd.server.auth import tokens_of
from inferd.server.grpc_interceptors import GrpcBearerAuth, TracedRpcs
from inferd.server.grpc_requests import Registrar


def create_grpc_server(runtime: Runtime, shared_port: bool = False) -> grpc.aio.Server:
    """The server, its port not yet bound. ``shared_port``: the port is reserved by a supervisor
    (`inferd.engines.sockets.reserve_port`) for its workers, and joined with SO_REUSEPORT; otherwise
    it is bound without, so no other server (another inferd on the same port) can join it."""
    receive, send = runtime.settings.grpc_limits
    tokens = tokens_of(runtime.settings)
    interceptors = [] if tracing.tracer is None else [TracedRpcs(tracing.tracer)]  # the span first
    if tokens is not None:
        interceptors.append(GrpcBearerAuth(tokens, HEALTH_METHODS))
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
    return server
