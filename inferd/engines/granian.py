"""granian (Rust HTTP, ``pip install inferd[granian]``) as a process's HTTP server: ``--http granian``.

One granian worker runs inside this process on its event loop, on the socket the engine bound (so
the supervisor's workers share one port as they do on uvicorn), and calls the app through RSGI
(`inferd.engines.rsgi`). It has the face of the uvicorn server the engine drives (`serve(sockets)`,
``started``, ``should_exit``, ``force_exit``): stopping closes the listener, then waits up to
``graceful_timeout`` for the requests in flight (a second signal stops waiting).

granian is driven through the worker classes its own embedded server uses (``granian._granian``),
which are not a public API: the extra pins the minor version this was written against.

What differs from uvicorn (docs/workers.md): granian's HTTP/1.1 limits are its own. ``header_timeout``
is its header read timeout and ``max_header_size`` its read buffer (at least 8 KiB), but an
oversized or slow head is dropped, not answered 431 or 408; ``max_connections`` is its
``backpressure`` (requests in flight, not open connections: an idle one is never closed to make
room); ``keep_alive_timeout``, ``body_timeout`` and ``min_body_rate`` do not apply (granian has no
body read timeout: a slow body holds its connection as long as its client sends).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import socket
from typing import Any

from starlette.types import ASGIApp

from inferd.core.settings import ServerSettings
from inferd.engines.rsgi import RsgiApp
from inferd.server.fast import FastInfer

logger = logging.getLogger("inferd.engine")
POLL_SECONDS = 0.05
_MODULES = ("_granian", "_futures", "rsgi")
BACKLOG = 2048


class GranianServer:
    def __init__(
        self, settings: ServerSettings, app: ASGIApp, fast: FastInfer | None, max_connections: int
    ) -> None:
        self.app = RsgiApp(app, fast)
        self.settings, self.max_connections = settings, max_connections
        self.started = self.should_exit = self.force_exit = False

    async def serve(self, sockets: list[socket.socket]) -> None:
        # granian's stubs lag behind its worker classes' signatures: used untyped
        native, futures, rsgi = (importlib.import_module(f"granian.{name}") for name in _MODULES)
        from granian.http import HTTP1Settings

        loop = asyncio.get_running_loop()
        holder = native.SocketHolder(os.dup(sockets[0].fileno()), False, BACKLOG)
        stop = native.WorkerSignal()
        http1 = HTTP1Settings(
            header_read_timeout=int(self.settings.header_timeout * 1000),
            max_buffer_size=max(8192, self.settings.max_header_size),
        )
        worker = native.RSGIWorker(
            1, (None, holder), None, 1, 512, 1, 30, self.max_connections, "1", http1, None, False, None,
            *_NO_TLS, (None, None),
        )  # fmt: skip
        callback = futures._future_watcher_wrapper(rsgi._callback_wrapper(self.app.__rsgi__, None))
        worker.serve_async(futures._new_cbscheduler(loop, callback, impl_asyncio=True), loop, stop)
        self.started = True
        while not self.should_exit:
            await asyncio.sleep(POLL_SECONDS)
        stop.set()
        await self._drain()

    async def _drain(self) -> None:
        """Wait for the requests in flight, up to the grace period or a forced exit."""
        waited, in_flight = 0.0, self.app.in_flight
        while in_flight.count and not self.force_exit and waited < self.settings.graceful_timeout:
            await asyncio.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
        if in_flight.count:
            logger.warning("%d HTTP requests still running after the grace period", in_flight.count)


#: granian's TLS arguments with TLS off: enabled, cert, key, password, minimum protocol, CA, CRLs,
#: client verification.
_NO_TLS: tuple[Any, ...] = (False, None, None, None, "tls1.3", None, [], False)
