"""The control process (``inferd platform serve``): the control API and the endpoints' gateway on one
event loop, over the platform's state in ``DATA_DIR/platform``.

At start it re-adopts the services its previous run left running, with their replicas (or starts them
again), gives the gateway every endpoint and starts the autoscaler (`inferd.platform.scaling`); on
SIGTERM or Ctrl+C it stops accepting, lets in-flight requests finish, and leaves the services running for
the next control process to adopt (`inferd platform services stop` stops one).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from inferd.engines.http import SignalFreeServer, uvicorn_config
from inferd.engines.sockets import bind_http, free_ports, port_of
from inferd.platform.api.app import create_control_app
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.bundle_copies import BundleCopies
from inferd.platform.datapath import DataPath, GatewayPath
from inferd.platform.gateway import EndpointTable
from inferd.platform.gateway.grpc_proxy import serve_grpc_gateway
from inferd.platform.gateway.server import Limits, serve_gateway
from inferd.platform.haproxy import HAProxyPath
from inferd.platform.manager import Platform
from inferd.platform.scaling import Autoscaler, ScalePolicy
from inferd.platform.settings import PlatformSettings
from inferd.platform.store import Store
from inferd.server.auth import tokens_of

logger = logging.getLogger("inferd.platform")


@dataclass(frozen=True)
class Listening:
    """Where the control process answers, as its ready line says."""

    host: str
    api_port: int
    gateway_port: int
    grpc_port: int

    def ready_line(self) -> str:
        return (
            f"inferd platform ready: api=http://{self.host}:{self.api_port}/platform/v1 "
            f"gateway=http://{self.host}:{self.gateway_port}/e/ grpc={self.host}:{self.grpc_port}"
        )


def open_platform(settings: PlatformSettings, path: DataPath) -> Platform:
    root = platform_root(settings)
    store = Store(root / "platform.sqlite")
    copies = BundleCopies(settings.artifact_store) if settings.artifact_store else None
    artifacts = ArtifactStore(root / "artifacts", settings.max_bundle_size, copies=copies)
    platform = Platform(store, artifacts, path, root)
    platform.runs.configure(settings, settings.trigger_poll_seconds, settings.max_parallel_runs)
    return platform


def platform_root(settings: PlatformSettings) -> Path:
    root = (settings.data_dir / "platform").resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


@dataclass
class RunningPath:
    """The endpoints' data path as it runs: the platform's handle on it, its HTTP and gRPC ports,
    how it stops."""

    path: DataPath
    port: int
    grpc_port: int
    stop: Callable[[], Awaitable[None]]


async def start_data_path(settings: PlatformSettings) -> RunningPath:
    """The embedded gateway, or HAProxy, on ``gateway_port`` and ``grpc_gateway_port`` with the
    API's tokens."""
    upstream_token = settings.auth_tokens[0].get_secret_value() if settings.auth_tokens else None
    if settings.data_path == "haproxy":
        free = iter(free_ports(settings.host, 2))  # two distinct ones, for the ports given as 0
        port = settings.gateway_port or next(free)
        grpc_port = settings.grpc_gateway_port or next(free)
        tokens = [token.get_secret_value() for token in settings.auth_tokens]
        haproxy = HAProxyPath(
            platform_root(settings) / "haproxy",
            settings.host,
            port,
            tokens,
            upstream_token,
            settings.max_body_size,
            grpc_port=grpc_port,
        )
        await haproxy.start()
        return RunningPath(haproxy, port, grpc_port, haproxy.close)
    limits = Limits(
        settings.max_body_size,
        settings.max_header_size,
        settings.header_timeout,
        settings.keep_alive_timeout,
        settings.max_connections,
        settings.graceful_timeout,
    )
    table = EndpointTable()
    grpc_gateway = await serve_grpc_gateway(
        table,
        settings.host,
        settings.grpc_gateway_port,
        tokens=tokens_of(settings),
        upstream_token=upstream_token,
        max_message_size=settings.max_body_size,
        flood_limit=settings.grpc_flood_limit,
    )
    try:
        gateway = await serve_gateway(
            table,
            settings.host,
            settings.gateway_port,
            tokens=tokens_of(settings),
            limits=limits,
            upstream_token=upstream_token,
        )
    except BaseException:
        await grpc_gateway.stop(0)
        raise

    async def stop() -> None:
        await asyncio.gather(gateway.stop(), grpc_gateway.stop(settings.graceful_timeout))

    return RunningPath(GatewayPath(table), gateway.port, grpc_gateway.port, stop)


async def serve(settings: PlatformSettings, on_ready: Callable[[Listening], None]) -> None:
    gateway = await start_data_path(settings)
    platform = open_platform(settings, gateway.path)
    await platform.restore()
    policy = ScalePolicy(
        settings.autoscale_window, settings.autoscale_upscale_delay, settings.autoscale_downscale_delay
    )
    autoscaler = Autoscaler(platform, policy, settings.autoscale_interval)
    autoscaler.start()
    sock = bind_http(settings.host, settings.port)
    # the data path's real ports (0 in the settings asks for a free one): the console shows them
    ports = {"gateway_port": gateway.port, "grpc_gateway_port": gateway.grpc_port}
    app = create_control_app(platform, settings.model_copy(update=ports))
    api = SignalFreeServer(uvicorn_config(settings, app, settings.max_connections))
    task = asyncio.create_task(api.serve(sockets=[sock]))
    while not api.started and not task.done():
        await asyncio.sleep(0.01)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        if api.started:
            on_ready(Listening(settings.host, port_of(sock), gateway.port, gateway.grpc_port))
            await asyncio.wait([task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
    finally:
        api.should_exit = True
        await autoscaler.aclose()
        await asyncio.gather(task, gateway.stop(), return_exceptions=True)
        platform.detach()
        platform.store.close()
        logger.info("platform stopped; its services keep running for the next control process")
