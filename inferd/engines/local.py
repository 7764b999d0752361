"""One server process: the HTTP server (uvicorn, or granian: ``--http``) and the gRPC server
(inferd's own or grpc.aio: ``--grpc-server``) on one event loop, with graceful shutdown.

The engine owns the signals: SIGTERM or Ctrl+C stops accepting, lets in-flight HTTP requests and
gRPC calls finish within ``graceful_timeout``, then unloads the models. A second signal forces exit.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from starlette.types import ASGIApp

from inferd.config.settings import Settings
from inferd.core.sequences import refuse_sequences_across_workers
from inferd.engines import heap
from inferd.engines.http import HttpServer, SignalFreeServer, http_server, uvicorn_config
from inferd.engines.open_files import connection_budget, raise_open_files_limit
from inferd.engines.sockets import bind_http, bind_ports, listen_errors, port_of
from inferd.server.app import Runtime, build_runtime, create_app, create_metrics_app, fast_infer_of

if TYPE_CHECKING:
    from inferd.server.grpc import GrpcServer

logger = logging.getLogger("inferd.engine")
T = TypeVar("T")


@dataclass(frozen=True)
class Endpoints:
    """Where a server listens, as the ready line reports it."""

    host: str
    http_port: int
    grpc_port: int | None
    models: tuple[str, ...]
    metrics_port: int | None = None

    def ready_line(self) -> str:
        grpc = f"{self.host}:{self.grpc_port}" if self.grpc_port is not None else "off"
        line = f"inferd ready: http://{self.host}:{self.http_port} grpc={grpc} models={','.join(self.models)}"
        if self.metrics_port is not None:
            line += f" metrics=http://{self.host}:{self.metrics_port}"
        return line


OnReady = Callable[[Endpoints], None]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop where it is installed (everywhere but Windows)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


class Backend(Protocol):
    """What answers the requests one server process accepts: the models in this process
    (`LocalBackend`), or in a model process of its own (`inferd.engines.isolation`)."""

    async def start(self) -> tuple[tuple[str, ...], int | None]:
        """Load the models and start gRPC; returns the model names and the gRPC port (None: off)."""

    def app(self) -> ASGIApp:
        """The ASGI app answering HTTP, built once `start` returned."""

    async def drain(self, grace: float) -> None:
        """Stop gRPC, letting its in-flight calls finish within ``grace`` seconds."""

    async def close(self) -> None:
        """Unload the models, once HTTP and gRPC have drained."""


class LocalBackend:
    """The models loaded in this process, served over HTTP by the caller and over gRPC here.
    ``shared_grpc_port``: a supervisor reserved the gRPC port for its workers, who join it."""

    def __init__(self, runtime: Runtime, shared_grpc_port: bool = False) -> None:
        self.runtime = runtime
        self.shared_grpc_port = shared_grpc_port
        self.grpc_server: GrpcServer | None = None
        self.watching: asyncio.Task[None] | None = None

    async def start(self) -> tuple[tuple[str, ...], int | None]:
        settings = self.runtime.settings
        registry = self.runtime.registry
        heap.resume_frozen()  # inferd's start-up is frozen; the models load with the collector on
        await registry.load_all()
        if settings.workers > 1:
            refuse_sequences_across_workers(registry.entries(), settings.workers)
        await registry.follow()  # a worker started in place of a lost one does what the others did
        if self.runtime.poll_seconds is not None or registry.control is not None:
            self.watching = asyncio.create_task(registry.watch(self.runtime.poll_seconds))
        grpc_port = None
        if settings.grpc_enabled:
            # Imported here: with --no-grpc, grpc and protobuf (about 8 MiB) never load.
            from inferd.server.grpc import create_grpc_server

            self.grpc_server = create_grpc_server(self.runtime, self.shared_grpc_port)
            with listen_errors(settings.host, settings.grpc_port):
                grpc_port = self.grpc_server.add_insecure_port(f"{settings.host}:{settings.grpc_port}")
            await self.grpc_server.start()
        return tuple(self.runtime.registry.names()), grpc_port

    def app(self) -> ASGIApp:
        return create_app(self.runtime)

    async def drain(self, grace: float) -> None:
        if self.grpc_server is not None:
            await self.grpc_server.stop(grace)

    async def close(self) -> None:
        if self.watching is not None:
            self.watching.cancel()
        await self.runtime.close()


async def serve(
    settings: Settings,
    on_ready: OnReady,
    http_socket: socket.socket | None = None,
    runtime: Runtime | None = None,
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
    metrics_socket: socket.socket | None = None,
    backend: Backend | None = None,
) -> None:
    """Load the models, serve until a signal arrives, then drain and unload."""
    max_connections = connection_budget(settings.max_connections, raise_open_files_limit())
    if http_socket is None:  # ports of its own: every one checked before any model loads
        http_socket, metrics_socket = _bind_own_ports(settings, metrics_socket)
    try:
        backend = backend or LocalBackend(runtime or build_runtime(settings))
    except BaseException:
        http_socket.close()
        raise
    try:
        names, grpc_port = await backend.start()
        app = backend.app()
        http = http_server(settings, app, max_connections, fast_infer_of(app))
        metrics_server, metrics_port = None, None
        if settings.metrics_port is not None:
            metrics_sock = metrics_socket or bind_http(settings.host, settings.metrics_port)
            metrics_server, metrics_port = (
                SignalFreeServer(uvicorn_config(settings, create_metrics_app(settings), max_connections)),
                port_of(metrics_sock),
            )
            metrics_task = asyncio.create_task(metrics_server.serve(sockets=[metrics_sock]))
        stop = _stop_event(http, stop_signals)
        http_task = asyncio.create_task(http.serve(sockets=[http_socket]))
        while not http.started and not http_task.done():
            await asyncio.sleep(0.01)
        if http.started:
            heap.settle()  # what start-up built stays out of the collector's full collections
            on_ready(Endpoints(settings.host, port_of(http_socket), grpc_port, names, metrics_port))
        await asyncio.wait([http_task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        # Both servers stop accepting at once and drain their in-flight calls side by side.
        http.should_exit = True
        draining = [http_task, asyncio.create_task(backend.drain(settings.graceful_timeout))]
        if metrics_server is not None:
            metrics_server.should_exit = True
            draining.append(metrics_task)
        await asyncio.gather(*draining)
    finally:
        await backend.close()
        logger.info("server stopped")


def _bind_own_ports(
    settings: Settings, metrics_socket: socket.socket | None
) -> tuple[socket.socket, socket.socket | None]:
    """The HTTP and metrics sockets of a server with ports of its own, bound now; its gRPC port (which
    its gRPC server binds once the models are loaded) is checked free now and let go."""
    grpc_port = settings.grpc_port if settings.grpc_enabled and settings.grpc_port else None
    metrics_port = settings.metrics_port if metrics_socket is None else None
    bound = bind_ports(settings.host, settings.port, grpc_port, metrics_port)
    if bound.grpc is not None:
        bound.grpc.close()
    return bound.http, metrics_socket or bound.metrics


def _stop_event(http: HttpServer, signals: tuple[signal.Signals, ...]) -> asyncio.Event:
    """Set on the first signal; a second one makes the HTTP server give up on draining."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:
        if stop.is_set():
            http.force_exit = True
        stop.set()

    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    return stop


def print_ready(endpoints: Endpoints) -> None:
    print(endpoints.ready_line(), flush=True)
