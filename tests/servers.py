"""Real servers for tests: ``inferd serve`` in a subprocess on free loopback ports, or an ASGI app
on uvicorn in a thread; and the one way a conftest turns them into fixtures (``served``) and clients
(``client_of``, ``RunningServer.http``, ``RunningServer.grpc_channel``)."""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import grpc
import httpx
import pytest
import uvicorn
import uvloop
from starlette.types import ASGIApp

READY = re.compile(
    r"inferd ready: http://(?P<host>[^:]+):(?P<port>\d+) grpc=(?P<grpc>\S+) models=(?P<models>\S*)"
    r"( metrics=(?P<metrics>\S+))?"
)
ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60.0
T = TypeVar("T")


@dataclass
class RunningServer:
    """A server `serve` started: its process, where it listens, the models it serves and its log."""

    process: subprocess.Popen[str]
    http_url: str
    grpc_address: str | None
    models: list[str]
    stderr_lines: list[str] = field(default_factory=list)
    metrics_url: str | None = None

    @property
    def http_address(self) -> str:
        """host:port, as tritonclient.http wants it."""
        return self.http_url.removeprefix("http://")

    @property
    def log(self) -> str:
        return "".join(self.stderr_lines)

    def http(self, **options: Any) -> httpx.Client:
        """An httpx client on this server's base URL (30 s timeout unless ``options`` say otherwise);
        use it as ``with server.http() as http:`` so its connections are closed."""
        return httpx.Client(base_url=self.http_url, **{"timeout": 30, **options})

    def grpc_channel(self) -> grpc.Channel:
        """A gRPC channel to this server (``with server.grpc_channel() as channel:``)."""
        assert self.grpc_address, "the server did not start gRPC"
        return grpc.insecure_channel(self.grpc_address)

    def peak_memory(self) -> int:
        """The server process's peak resident memory so far, in bytes (``VmHWM``, which only grows:
        compare it before and after a request to see what the request cost at its worst)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmHWM in /proc/{self.process.pid}/status")

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        """The log once it holds ``text``: stderr is read by a thread, so a line written while answering
        a request may arrive a moment after the answer."""
        deadline = time.monotonic() + timeout
        while text not in self.log and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.log


def with_this_tree(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout first on PYTHONPATH, so a server started in another folder (a user's
    project) runs the inferd under test, not whichever one is installed."""
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path]
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), *paths])}


def inferd_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "inferd", *args]


@contextmanager
def serve(
    target: str,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    free_ports: bool = True,
    python: Path | None = None,
) -> Iterator[RunningServer]:
    """Run ``inferd serve TARGET --port 0 --grpc-port 0 ARGS`` until the block ends, then SIGTERM it;
    without ``free_ports`` the ports are left to ARGS and the environment. ``python`` runs the inferd
    installed in another environment (this tree is then kept off PYTHONPATH)."""
    ports = ("--port", "0", "--grpc-port", "0") if free_ports else ()
    command = inferd_command("serve", target, *ports, *args)
    environment = {**os.environ, **(env or {})}
    if python is not None:
        command[0] = str(python)
        environment.pop("PYTHONPATH", None)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd or ROOT,
        env=environment if python is not None else with_this_tree(environment),
    )
    stderr_lines: list[str] = []
    drain = threading.Thread(target=_drain, args=(process, stderr_lines), daemon=True)
    drain.start()
    try:
        match = _wait_ready(process, stderr_lines)
        grpc = match["grpc"]
        yield RunningServer(
            process,
            f"http://{match['host']}:{match['port']}",
            None if grpc == "off" else grpc,
            [name for name in match["models"].split(",") if name],
            stderr_lines,
            match["metrics"],
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        drain.join(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def served(
    start: Callable[..., AbstractContextManager[RunningServer]],
    scope: Literal["session", "module"] = "session",
) -> Any:
    """A pytest fixture holding a real server for ``scope``: ``start`` gets the fixtures its parameters
    name (a project another fixture built, ``tmp_path_factory``...) and returns ``serve(...)``, which
    the fixture enters and leaves. Assign it to the fixture's name::

        identity_server = served(lambda: serve("Identity", "--dialect", "seldon", cwd=COMPONENTS))
        v08_server = served(lambda v08_project: serve(str(v08_project / "cortex.yaml")))
    """

    def fixture(**fixtures: Any) -> Iterator[RunningServer]:
        with start(**fixtures) as server:
            yield server

    fixture.__signature__ = inspect.signature(start)  # type: ignore[attr-defined]  # pytest reads it
    return pytest.fixture(scope=scope)(fixture)


def client_of(server: str, **options: Any) -> Any:
    """A pytest fixture: an httpx client on the base URL of the server fixture named ``server``, one
    per test (``RunningServer.http(**options)``), closed after it."""

    def fixture(**fixtures: RunningServer) -> Iterator[httpx.Client]:
        with fixtures[server].http(**options) as http:
            yield http

    parameter = inspect.Parameter(server, inspect.Parameter.KEYWORD_ONLY)
    fixture.__signature__ = inspect.Signature([parameter])  # type: ignore[attr-defined]
    return pytest.fixture(fixture)


def _drain(process: subprocess.Popen[str], lines: list[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)


def _wait_ready(process: subprocess.Popen[str], stderr_lines: list[str]) -> re.Match[str]:
    assert process.stdout is not None
    timer = threading.Timer(START_TIMEOUT, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            match = READY.search(line)
            if match:
                return match
    finally:
        timer.cancel()
    process.wait()
    raise RuntimeError(
        f"inferd exited with {process.returncode} before it was ready:\n{''.join(stderr_lines)}"
    )


def free_port() -> int:
    """A loopback port nothing listens on right now (for tests that must name a port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answering_pid(server: RunningServer, model: str, request: dict[str, object]) -> int:
    """The pid a model answers with, asked on a fresh connection (so any worker may take it)."""
    response = httpx.post(f"{server.http_url}/v2/models/{model}/infer", json=request, timeout=30)
    assert response.status_code == 200, response.text
    pid: int = response.json()["outputs"][0]["data"][0]
    return pid


def pids_seen(
    server: RunningServer, model: str, request: dict[str, object], want: int, attempts: int = 400
) -> set[int]:
    """The pids answering ``model``, asking until ``want`` different ones have answered."""
    seen: set[int] = set()
    for _ in range(attempts):
        seen.add(answering_pid(server, model, request))
        if len(seen) >= want:
            break
    return seen


@contextmanager
def serve_asgi(app: ASGIApp) -> Iterator[str]:
    """``app`` on uvicorn in a thread, on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class LoopThread:
    """An event loop (uvloop) running in a thread of its own, for servers started in this process."""

    loop: asyncio.AbstractEventLoop

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coroutine`` in the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@contextmanager
def loop_thread() -> Iterator[LoopThread]:
    loop = uvloop.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield LoopThread(loop)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def frame_types(data: bytes) -> list[int]:
    """The type of each whole HTTP/2 frame in ``data``."""
    types, position = [], 0
    while position + 9 <= len(data):
        types.append(data[position + 3])
        position += 9 + int.from_bytes(data[position : position + 3], "big")
    return types
