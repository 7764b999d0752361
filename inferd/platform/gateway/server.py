"""The gateway on uvicorn and httptools, in the caller's event loop, with inferd's connection limits
(`inferd.engines.connections`), the ``Host`` check of a server on loopback (`inferd.server.origins`:
a page on a rebound DNS name reaches no endpoint) and, when tokens are given, its bearer-token check
(`inferd.server.auth.BearerAuth`, which also strips ``Authorization`` before forwarding)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

from inferd.engines.connections import ConnectionLimits, LimitedHttpToolsProtocol
from inferd.engines.http import SignalFreeServer
from inferd.engines.sockets import bind_http, port_of
from inferd.platform.gateway.proxy import DEFAULT_MAX_BODY, Gateway
from inferd.platform.gateway.table import EndpointTable
from inferd.server.auth import BearerAuth, Tokens, open_routes
from inferd.server.origins import HostCheck, HostPolicy


@dataclass(frozen=True)
class Limits:
    """What one client connection may cost (as ``inferd serve``'s settings of the same names)."""

    max_body_size: int = DEFAULT_MAX_BODY
    max_header_size: int = 64 * 1024
    header_timeout: float = 30.0
    keep_alive_timeout: int = 30
    max_connections: int = 1000
    graceful_timeout: float = 30.0
    body_timeout: float = 30.0
    min_body_rate: int = 240


class NoDelayProtocol(LimitedHttpToolsProtocol):
    """inferd's limited httptools protocol with Nagle's algorithm off on every client connection.

    asyncio turns it off itself only for sockets made with ``IPPROTO_TCP`` (uvloop for every TCP
    socket); a listening socket made with protocol 0 (`bind_http`) hands out connections where the
    body of an answer, written after its head, waits for the client's delayed ACK: 40 ms a request."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


class GatewayServer:
    """A running gateway: where it listens, its app, and `stop`."""

    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], gateway: Gateway, port: int) -> None:
        self.server, self.task, self.gateway, self.port = server, task, gateway, port

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (within the graceful timeout), close the
        idle upstream connections."""
        self.server.should_exit = True
        await self.task
        self.gateway.close()


async def serve_gateway(
    table: EndpointTable,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    endpoint: str | None = None,
    tokens: Tokens | None = None,
    open_paths: Iterable[str] = (),
    upstream_token: str | None = None,
    limits: Limits | None = None,
    sock: socket.socket | None = None,
    hosts: HostPolicy | None = None,
) -> GatewayServer:
    """Start serving the endpoints of ``table`` on ``host:port`` (0: a free port) in this event
    loop; returns once it accepts connections. ``endpoint``: serve that one endpoint on every path
    (a dedicated port) instead of ``/e/{endpoint}/...``. ``tokens``: require ``Authorization: Bearer
    <token>`` except on GET/HEAD of ``open_paths``. ``upstream_token``: sent to the services.
    ``hosts``: the ``Host`` names answered (`inferd.server.origins.host_policy`), others 403."""
    limits = limits or Limits()
    gateway = Gateway(table, endpoint, max_body_size=limits.max_body_size, upstream_token=upstream_token)
    app: ASGIApp = gateway
    if tokens is not None:
        app = BearerAuth(gateway, tokens, open_routes(open_paths))
    if hosts is not None:
        app = HostCheck(app, hosts)
    sock = sock or bind_http(host, port)
    server = SignalFreeServer(uvicorn_config(app, limits))
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()  # its error, if it failed to start
            raise RuntimeError("the gateway stopped before it started")
        await asyncio.sleep(0.01)
    return GatewayServer(server, task, gateway, port_of(sock))


def uvicorn_config(app: ASGIApp, limits: Limits) -> uvicorn.Config:
    """uvicorn on httptools with inferd's connection limits; no Date or Server header of its own:
    the upstream's pass through."""
    connection_limits = ConnectionLimits(
        limits.header_timeout,
        limits.max_header_size,
        limits.max_connections,
        limits.body_timeout,
        limits.min_body_rate,
    )
    return uvicorn.Config(
        app,
        http=type("GatewayHttpProtocol", (NoDelayProtocol,), {"limits": connection_limits}),
        ws="none",
        loop="none",
        lifespan="off",
        access_log=False,
        log_config=None,
        server_header=False,
        date_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=int(limits.graceful_timeout),
        timeout_keep_alive=limits.keep_alive_timeout,
    )
