"""Real servers on loopback for the gateway: small upstream apps on uvicorn in threads (each answers
with its id, echoes, sleeps or streams), a gateway in a thread of its own with its own event loop,
and one ``inferd serve`` of a native model folder."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from inferd.platform.gateway import EndpointTable, GatewayServer, serve_gateway
from tests.servers import RunningServer, free_port, serve, served

T = TypeVar("T")
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
MODEL = """
import numpy as np

import inferd


class Double(inferd.Model):
    inputs = (inferd.TensorSpec("x", "FP32", (-1,)),)
    outputs = (inferd.TensorSpec("y", "FP32", (-1,)),)

    def predict(self, inputs):
        return {"y": inputs["x"] * 2}
"""


@dataclass
class Upstream:
    """A test upstream: its id, ``host:port``, the paths of the requests it received and the bodies;
    ``delay``: seconds it waits before answering anything."""

    ident: str
    address: str
    hits: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    delay: float = 0.0

    @property
    def url(self) -> str:
        return f"http://{self.address}"


def upstream_app(upstream: Upstream) -> Starlette:
    """Answers every path with its id (header ``x-upstream`` and, by default, the body); ``/echo``
    returns the request's body and content type, ``/headers`` its headers as JSON, ``/sleep/{s}``
    waits, ``/stream`` answers in chunks, ``/status/{code}`` with that status."""

    async def handle(request: Request) -> Response:
        path = request.url.path
        if upstream.delay:
            await asyncio.sleep(upstream.delay)
        upstream.bodies.append(await request.body())
        upstream.hits.append(path)
        headers = {"x-upstream": upstream.ident}
        if path == "/echo":
            body = await request.body()
            media = request.headers.get("content-type")
            return Response(body, headers=headers, media_type=media)
        if path == "/headers":
            await request.body()
            seen = [[name.decode(), value.decode()] for name, value in request.scope["headers"]]
            return JSONResponse({"headers": seen, "query": request.url.query}, headers=headers)
        if path.startswith("/sleep/"):
            await asyncio.sleep(float(path.removeprefix("/sleep/")))
        if path == "/stream":

            async def parts() -> Any:
                for number in range(100):
                    yield b"%04d" % number

            return StreamingResponse(parts(), headers=headers)
        if path.startswith("/status/"):
            return Response(b"", status_code=int(path.removeprefix("/status/")), headers=headers)
        if path == "/close":
            return Response(upstream.ident.encode(), headers={**headers, "connection": "close"})
        return Response(upstream.ident.encode(), headers=headers, media_type="text/plain")

    return Starlette(routes=[Route("/{path:path}", handle, methods=METHODS)])


@contextmanager
def serve_upstream(ident: str, keep_alive: int = 5, delay: float = 0.0) -> Iterator[Upstream]:
    """An upstream app on uvicorn (httptools) in a thread, on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    upstream = Upstream(ident, f"127.0.0.1:{sock.getsockname()[1]}", delay=delay)
    config = uvicorn.Config(
        upstream_app(upstream),
        log_level="warning",
        lifespan="off",
        http="httptools",
        timeout_keep_alive=keep_alive,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield upstream
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class RunningGateway:
    """A gateway serving in a thread of its own (its own event loop)."""

    table: EndpointTable
    server: GatewayServer
    loop: asyncio.AbstractEventLoop

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coroutine`` in the gateway's event loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def http(self, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, **{"timeout": 30, "trust_env": False, **options})


@contextmanager
def run_gateway(table: EndpointTable, **options: Any) -> Iterator[RunningGateway]:
    """`serve_gateway(table, **options)` on a free port, in a thread running its own event loop (uvloop,
    as ``inferd`` runs; the in-process tests run the gateway on asyncio's own loop)."""
    loop = uvloop.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        server = asyncio.run_coroutine_threadsafe(serve_gateway(table, **options), loop).result(10)
        running = RunningGateway(table, server, loop)
        try:
            yield running
        finally:
            running.call(server.stop())
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture(scope="module")
def alpha() -> Iterator[Upstream]:
    with serve_upstream("alpha") as upstream:
        yield upstream


@pytest.fixture(scope="module")
def beta() -> Iterator[Upstream]:
    with serve_upstream("beta") as upstream:
        yield upstream


@pytest.fixture(scope="module")
def gamma() -> Iterator[Upstream]:
    with serve_upstream("gamma") as upstream:
        yield upstream


@pytest.fixture(autouse=True)
def fresh_hits(request: pytest.FixtureRequest) -> None:
    """Each test counts only its own requests."""
    for name in ("alpha", "beta", "gamma"):
        if name in request.fixturenames:
            upstream = request.getfixturevalue(name)
            upstream.hits.clear()
            upstream.bodies.clear()


@pytest.fixture
def down() -> str:
    """A loopback address nothing listens on."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture
def table() -> EndpointTable:
    return EndpointTable()


@pytest.fixture
def gateway(table: EndpointTable) -> Iterator[RunningGateway]:
    with run_gateway(table) as running:
        yield running


@pytest.fixture
def http(gateway: RunningGateway) -> Iterator[httpx.Client]:
    with gateway.http() as client:
        yield client


def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("double")
    (folder / "model.py").write_text(MODEL)
    return folder


#: ``inferd serve`` of a one-model native folder (model ``Double``: y = 2x), for this module.
double_server = served(
    lambda tmp_path_factory: serve(str(model_folder(tmp_path_factory)), "--no-grpc"), scope="module"
)


def address_of(server: RunningServer) -> str:
    return server.http_address
