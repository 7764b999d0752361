"""uvicorn as inferd runs it, for every HTTP server of a process: httptools with inferd's connection
limits (`inferd.engines.connections`), and no signal handling of its own (the process's owner stops
its servers together). Kept apart from the engine so the platform's control process uses it without
loading the model-serving stack."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import uvicorn
from starlette.types import ASGIApp

from inferd.core.settings import ServerSettings
from inferd.engines.connections import ConnectionLimits, limited_protocol

if TYPE_CHECKING:  # the fast path comes with the app that has one: the platform's control process
    # imports this module without the model-serving stack
    from inferd.server.fast import FastInfer


class HttpServer(Protocol):
    """What the engine drives of an HTTP server: uvicorn's `uvicorn.Server` face, which
    `inferd.engines.granian.GranianServer` has too."""

    started: bool
    should_exit: bool
    force_exit: bool

    async def serve(self, sockets: list[socket.socket]) -> None: ...


def http_server(
    settings: ServerSettings, app: ASGIApp, max_connections: int, fast: FastInfer | None = None
) -> HttpServer:
    """The HTTP server ``settings.http`` names for ``app`` (``fast``: its V2 infer fast path)."""
    if settings.http == "granian":
        # Imported here: granian is an optional dependency, loaded only when chosen.
        from inferd.engines.granian import GranianServer

        return GranianServer(settings, app, fast, max_connections)
    return SignalFreeServer(uvicorn_config(settings, app, max_connections, fast))


class SignalFreeServer(uvicorn.Server):
    """uvicorn without its own signal handling: its owner (the engine, which stops HTTP and gRPC
    together; the platform's control process) handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def uvicorn_config(
    settings: ServerSettings, app: ASGIApp, max_connections: int, fast: FastInfer | None = None
) -> uvicorn.Config:
    """uvicorn on httptools with inferd's connection limits (`inferd.engines.connections`), its
    connections calling ``fast`` for the requests it takes (`inferd.engines.fast_connection`)."""
    limits = ConnectionLimits(
        settings.header_timeout,
        settings.max_header_size,
        max_connections,
        settings.body_timeout,
        settings.min_body_rate,
    )
    if fast is None:
        protocol = limited_protocol(limits)
    else:
        from inferd.engines.fast_connection import fast_protocol

        protocol = fast_protocol(limits, fast)
    return uvicorn.Config(
        app,
        http=protocol,
        ws="none",  # no WebSocket routes: and not importing a WebSocket library saves memory
        loop="none",
        lifespan="off",
        access_log=False,
        log_config=None,
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=int(settings.graceful_timeout),
        timeout_keep_alive=settings.keep_alive_timeout,
    )
