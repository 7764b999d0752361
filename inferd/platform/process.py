"""The control process (``inferd platform serve``): the control API and the endpoints' gateway on one
event loop, over the platform's state in ``DATA_DIR/platform``.

At start it re-adopts the services its previous run left running, with their replicas (or starts them
again), gives the gateway every endpoint and starts the autoscaler (`inferd.platform.scaling`); on
SIGTERM or Ctrl+C it stops accepting, lets in-flight requests finish, and leaves the services running for
the next control process to adopt (`inferd platform services stop` stops one).

Without ``INFERD_AUTH_TOKENS`` (and without ``INFERD_PLATFORM_OPEN``) the control API takes the token
kept in the data folder, made at the first start (`inferd.platform.admin_token`); the line before the
ready line says it and how to use it.
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
from inferd.platform import admin_token
from inferd.platform.api.app import create_control_app
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.bundle_copies import BundleCopies
from inferd.platform.console import history
from inferd.platform.datapath import DataPath, GatewayPath
from inferd.platform.gateway import EndpointTable
from inferd.platform.gateway.grpc_proxy import serve_grpc_gateway
from inferd.platform.gateway.server import Limits, serve_gateway
from inferd.platform.haproxy import HAProxyPath
from inferd.platform.manager import Platform
from inferd.platform.scaling import Autoscaler, ScalePolicy
from inferd.platform.service_tokens import ServiceTokens
from inferd.platform.settings import PlatformSettings
from inferd.platform.store import Store
from inferd.server.auth import tokens_of
from inferd.server.origins import host_policy

logger = logging.getLogger("inferd.platform")


@dataclass(frozen=True)
class Listening:
    """Where the control process answers, as its ready line says."""

    host: str
    api_port: int
    gateway_port: int
    grpc_port: int
    #: What the control API takes when its token was generated: the line to print before the ready line.
    token_line: str | None = None

    def ready_line(self) -> str:
        """The addresses in the order people look for them; the console (a page for people, on the
        API's port, where ``/`` leads too) last, so what parses the others keeps working."""
        return (
            f"inferd platform ready: api=http://{self.host}:{self.api_port}/platform/v1 "
            f"gateway=http://{self.host}:{self.gateway_port}/e/ grpc={self.host}:{self.grpc_port} "
            f"console=http://{self.host}:{self.api_port}/console/"
        )


def open_platform(settings: PlatformSettings, path: DataPath) -> Platform:
    root = platform_root(settings)
    store = Store(root / "platform.sqlite")
    copies = BundleCopies(settings.artifact_store) if settings.artifact_store else None
    artifacts = ArtifactStore(
        root / "artifacts",
        settings.max_bundle_size,
        copies=copies,
        max_header_bytes=settings.max_archive_header_size,
        max_metadata_bytes=settings.max_archive_metadata_size,
    )
    platform = Platform(
        store, artifacts, path, root, allowed_outside_targets=settings.allowed_outside_targets
    )
    platform.tokens = ServiceTokens(root, shared=settings.data_path == "haproxy")
    platform.runs.configure(
        settings, settings.trigger_poll_seconds, settings.max_parallel_runs, settings.run_timeout
    )
    platform.budget.limit = settings.max_processes
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
    API's tokens. The gateway presents each service its own token (`Split.tokens`); HAProxy the data
    path's, which every service takes too (`inferd.platform.service_tokens`). Never the API's."""
    if settings.data_path == "haproxy":
        upstream_token = ServiceTokens(platform_root(settings), shared=True).shared
        free = iter(free_ports(settings.host, 2))  # two distinct ones, for the ports given as 0
        port = settings.gateway_port or next(free)
        grpc_port = settings.grpc_gateway_port or next(free)
        tokens = [token.get_secret_value() for token in settings.auth_tokens]
        # the Host check of the embedded gateway (`host_policy`), as HAProxy's configuration says it
        hosts = None if host_policy(settings) is None else settings.allowed_hosts
        haproxy = HAProxyPath(
            platform_root(settings) / "haproxy",
            settings.host,
            port,
            tokens,
            upstream_token,
            settings.max_body_size,
            grpc_port=grpc_port,
            hosts=hosts,
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
        settings.body_timeout,
        settings.min_body_rate,
    )
    table = EndpointTable()
    grpc_gateway = await serve_grpc_gateway(
        table,
        settings.host,
        settings.grpc_gateway_port,
        tokens=tokens_of(settings),
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
            hosts=host_policy(settings),
        )
    except BaseException:
        await grpc_gateway.stop(0)
        raise

    async def stop() -> None:
        await asyncio.gather(gateway.stop(), grpc_gateway.stop(settings.graceful_timeout))

    return RunningPath(GatewayPath(table), gateway.port, grpc_gateway.port, stop)


@dataclass(frozen=True)
class GeneratedToken:
    token: str
    path: Path
    new: bool

    def line(self, host: str, port: int) -> str:
        """What the user is told at start: the token, where it is kept, and how to use it."""
        kept = "new, kept" if self.new else "kept"
        return (
            f"inferd platform token: {self.token} ({kept} in {self.path}, mode 0600; the inferd CLI "
            f"of this user reads it by itself; send 'Authorization: Bearer TOKEN' from other clients, "
            f"sign in to the console at http://{host}:{port}/console/login with it; "
            "INFERD_PLATFORM_OPEN=1 runs without a token)"
        )


def generated_token(settings: PlatformSettings) -> GeneratedToken | None:
    """The control API's token kept in the data folder (made now if there is none), when no
    ``auth_tokens`` are set and the platform is not run open."""
    if settings.auth_tokens or settings.platform_open:
        return None
    path = admin_token.token_file(platform_root(settings).parent)
    token, new = admin_token.load_or_create(path)
    return GeneratedToken(token, path, new)


async def serve(settings: PlatformSettings, on_ready: Callable[[Listening], None]) -> None:
    generated = generated_token(settings)
    if generated is not None:
        settings = settings.with_generated_token(generated.token)
    gateway = await start_data_path(settings)
    platform = open_platform(settings, gateway.path)
    await platform.restore()
    policy = ScalePolicy(
        settings.autoscale_window, settings.autoscale_upscale_delay, settings.autoscale_downscale_delay
    )
    autoscaler = Autoscaler(platform, policy, settings.autoscale_interval)
    autoscaler.start()
    history.HISTORY.every(settings.console_sample_interval)
    sampler = history.Sampler(platform, history.HISTORY)
    sampler.start()
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
    record: Path | None = None
    try:
        if api.started:
            port = port_of(sock)
            line = None
            if generated is not None:
                record = _record(settings, port, generated.path)
                line = generated.line(settings.host, port)
            on_ready(Listening(settings.host, port, gateway.port, gateway.grpc_port, line))
            await asyncio.wait([task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if record is not None:
            admin_token.remove_record(record)
        api.should_exit = True
        await autoscaler.aclose()
        await sampler.aclose()
        await asyncio.gather(task, gateway.stop(), return_exceptions=True)
        platform.detach()
        platform.store.close()
        logger.info("platform stopped; its services keep running for the next control process")


def _record(settings: PlatformSettings, port: int, token_path: Path) -> Path | None:
    """Where the CLI finds the token file by this port (`inferd.platform.admin_token.local_token`);
    a runtime folder that cannot be written only costs the CLI that lookup."""
    folder = admin_token.runtime_dir(settings.runtime_dir)
    if folder is None:
        return None
    try:
        return admin_token.write_record(folder, port, token_path)
    except OSError as exc:
        logger.warning("cannot record the control token's file in %s: %s", folder, exc)
        return None
