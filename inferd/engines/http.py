"""uvicorn as inferd runs it, for every HTTP server of a process: httptools with inferd's connection
limits (`inferd.engines.connections`), and no signal handling of its own (the process's owner stops
its servers together). Kept apart from the engine so the platform's control process uses it without
loading the model-serving stack."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp

from inferd.core.settings import ServerSettings
from inferd.engines.connections import ConnectionLimits, limited_protocol


class SignalFreeServer(uvicorn.Server):
    """uvicorn without its own signal handling: its owner (the engine, which stops HTTP and gRPC
    together; the platform's control process) handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def uvicorn_config(settings: ServerSettings, app: ASGIApp, max_connections: int) -> uvicorn.Config:
    """uvicorn on httptools with inferd's connection limits (`inferd.engines.connections`)."""
    limits = ConnectionLimits(settings.header_timeout, settings.max_header_size, max_connections)
    return uvicorn.Config(
        app,
        http=limited_protocol(limits),
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
