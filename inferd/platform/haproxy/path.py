"""HAProxy as a data path: the process, its configuration, and route changes.

A weight change of a service an endpoint already routes to is one runtime command; a service new to
the endpoint is added as a dynamic server, one leaving it is put in maintenance (it takes nothing
new) and deleted once drained. A new or removed endpoint (a backend) needs a new configuration: the
file is written and the master reloads, the listening socket passed to the new worker, so nothing is
refused meanwhile. The configuration is always written from the current routes, so a reload keeps
every change the runtime API made. Shadow traffic is the embedded gateway's only.

gRPC calls, on a frontend of their own (``grpc_port``), go to a second backend of each endpoint
whose servers are its services' gRPC ports, weighted and changed with the HTTP ones; a service
drains once neither of its servers holds a call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from inferd.core.errors import InvalidInput
from inferd.platform.datapath import GrpcAddresses, Routes, ShadowRoute, UpstreamTokens, spread
from inferd.platform.haproxy.config import (
    Frontend,
    backend_name,
    grpc_backend_name,
    host_pattern,
    render,
    server_name,
)
from inferd.platform.haproxy.runtime import RuntimeAPI

logger = logging.getLogger("inferd.platform.haproxy")
POLL_SECONDS = 0.02
#: A route's weight (0..100) times this is shared by its replicas' servers (HAProxy takes 0..256),
#: so a share of 10 over 3 replicas is 7, 7 and 6 rather than 4, 3 and 3.
WEIGHT_SCALE = 2
START_SECONDS = 10.0


class HAProxyPath:
    """One HAProxy master process serving the endpoints, configured under ``folder``."""

    def __init__(
        self,
        folder: Path,
        host: str,
        port: int,
        tokens: list[str] | None = None,
        upstream_token: str | None = None,
        max_body_size: int = 64 * 1024 * 1024,
        grpc_port: int | None = None,
        hosts: list[str] | None = None,
    ) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.config = folder / "haproxy.cfg"
        token_file = None
        if tokens:
            token_file = folder / "tokens.lst"
            token_file.write_text("".join(f"Bearer {token}\n" for token in tokens))
            token_file.chmod(0o600)
        self.frontend = Frontend(
            host,
            port,
            folder / "admin.sock",
            token_file,
            f"Bearer {upstream_token}" if upstream_token else None,
            max_body_size,
            grpc_port=grpc_port,
            hosts=None if hosts is None else host_pattern(hosts),
        )
        self.api = RuntimeAPI(self.frontend.admin_socket)
        self.routes: dict[str, dict[str, int]] = {}
        #: Each upstream's gRPC address, as the platform gave it.
        self.grpc_of: dict[str, str] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self.executable = "haproxy"
        self._lock = asyncio.Lock()

    @property
    def port(self) -> int:
        return self.frontend.port

    async def start(self) -> None:
        executable = shutil.which("haproxy")
        if executable is None:
            raise InvalidInput("the haproxy data path needs HAProxy installed (Debian: apt install haproxy)")
        self.executable = executable
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write()
        command = [executable, "-W", "-db", "-f", str(self.config), "-S", str(self.folder / "master.sock")]
        log = (self.folder / "haproxy.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        await self._wait_for(lambda: self.frontend.admin_socket.exists(), "start")

    @property
    def grpc_port(self) -> int | None:
        return self.frontend.grpc_port

    async def route(
        self,
        name: str,
        routes: Routes,
        shadow: ShadowRoute,
        grpc: GrpcAddresses | None = None,
        tokens: UpstreamTokens | None = None,
    ) -> None:
        """As `DataPath.route`; ``tokens`` are not told apart: HAProxy sets its header before it
        picks a server, so it sends its ``upstream_token``, which every service takes."""
        if shadow is not None:
            raise InvalidInput("shadow traffic needs the embedded gateway (data_path: gateway), not HAProxy")
        wanted = spread(routes, WEIGHT_SCALE)
        async with self._lock:
            before = self.routes.get(name)
            grpc_before = self._grpc_routes(name)
            self.grpc_of.update(grpc or {})
            self.routes[name] = {**(before or {}), **wanted}
            if before is None:
                await self._reload()
                return
            for upstream in set(before) - set(wanted):
                self.routes[name][upstream] = 0
            await self._change(backend_name(name), before, wanted, "")
            if self.frontend.grpc_port is not None:
                await self._change(grpc_backend_name(name), grpc_before, self._grpc_routes(name), " proto h2")

    async def _change(self, backend: str, before: dict[str, int], wanted: dict[str, int], extra: str) -> None:
        """Move ``backend``'s servers from the weights ``before`` to those ``wanted`` at run time."""
        # raised weights first: lowering one first could leave no server with weight a moment
        raised_first = sorted(wanted.items(), key=lambda item: item[1] <= before.get(item[0], 0))
        for upstream, weight in raised_first:
            server = f"{backend}/{server_name(upstream)}"
            if upstream not in before:
                await self.api.change(f"add server {server} {upstream}{extra} weight {weight}")
                await self.api.change(f"enable server {server}")
            else:
                await self.api.change(f"set server {server} weight {weight}")
        for upstream in set(before) - set(wanted):
            await self.api.change(f"set server {backend}/{server_name(upstream)} weight 0")

    def _grpc_routes(self, name: str) -> dict[str, int]:
        """Endpoint ``name``'s gRPC servers and weights: those of its upstreams that serve gRPC."""
        routes = self.routes.get(name, {})
        return {
            self.grpc_of[upstream]: weight for upstream, weight in routes.items() if upstream in self.grpc_of
        }

    async def unroute(self, name: str) -> None:
        async with self._lock:
            if self.routes.pop(name, None) is not None:
                await self._reload()

    async def drained(self, upstream: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        addresses = [upstream, self.grpc_of.get(upstream, upstream)]
        while any(map((await self.api.sessions()).get, addresses)):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(POLL_SECONDS)
        return True

    async def inflight(self) -> Mapping[str, int]:
        """Sessions of each upstream's HTTP server and of its gRPC one, together."""
        sessions = await self.api.sessions()
        upstreams = {upstream for routes in self.routes.values() for upstream in routes}
        return {
            upstream: sessions.get(upstream, 0) + sessions.get(self.grpc_of.get(upstream, ""), 0)
            for upstream in upstreams
        }

    async def close(self) -> None:
        """Stop HAProxy, letting its requests in flight finish (SIGUSR1: a soft stop)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGUSR1)
        try:
            await asyncio.wait_for(asyncio.to_thread(self.process.wait), 30)
        except TimeoutError:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def _write(self) -> None:
        temporary = self.config.with_suffix(".new")
        endpoints = {name: sorted(routes.items()) for name, routes in self.routes.items()}
        grpc = {name: sorted(self._grpc_routes(name).items()) for name in self.routes}
        temporary.write_text(render(self.frontend, endpoints, grpc))
        os.replace(temporary, self.config)

    async def _reload(self) -> None:
        """A new configuration: write it, check it, and have the master start a worker on it."""
        self._write()
        assert self.process is not None
        checked = await asyncio.to_thread(
            subprocess.run,
            [self.executable, "-c", "-q", "-f", str(self.config)],
            capture_output=True,
            text=True,
        )
        if checked.returncode != 0:
            raise InvalidInput(
                f"haproxy refused the endpoints' configuration: {checked.stdout}{checked.stderr}".strip()
            )
        self.process.send_signal(signal.SIGUSR2)
        wanted = {backend_name(name) for name in self.routes}
        deadline = time.monotonic() + START_SECONDS
        while await self._backends() != wanted:
            if self.process.poll() is not None or time.monotonic() >= deadline:
                raise InvalidInput(f"haproxy did not reload; see {self.folder / 'haproxy.log'}")
            await asyncio.sleep(POLL_SECONDS)

    async def _backends(self) -> set[str]:
        """The endpoints' backends the current worker has (what it answers with, once reloaded)."""
        try:
            listed = await self.api.ask("show backend")
        except OSError:  # the socket is passed from the old worker to the new one
            return set()
        return {line.strip() for line in listed.splitlines() if line.startswith("ep_")}

    async def _wait_for(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not ready():  # type: ignore[operator]
            if self.process is not None and self.process.poll() is not None:
                raise InvalidInput(f"haproxy exited during its {what}; see {self.folder / 'haproxy.log'}")
            if time.monotonic() >= deadline:
                raise InvalidInput(
                    f"haproxy did not {what} within {START_SECONDS:g} s; see {self.folder / 'haproxy.log'}"
                )
            await asyncio.sleep(POLL_SECONDS)
