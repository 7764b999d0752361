"""A server's own port forwarded to its Ray Serve application at a route prefix.

On a Ray cluster that several servers share, Ray Serve has one HTTP proxy per node and each server's
application answers under a prefix of its own (``ray_route_prefix``). The server still listens on its
own ``port`` with the paths its clients know: `Forward` sends each request there to the same path
under the prefix, at the proxy, over the keep-alive connections of `inferd.engines.upstream` (the
platform gateway's client), and streams the answer back. Method, headers (but the hop-by-hop ones and
``Host``), body and status pass unchanged. The body is read whole first, up to ``max_body_size``
(413 beyond, as the replicas would answer); a proxy that cannot be reached, or breaks off before it
answers, is a 502 naming the application, never the address.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator

from starlette.types import Receive, Scope, Send

from inferd.core.errors import BadGateway, PayloadTooLarge
from inferd.core.settings import ServerSettings
from inferd.engines.http import SignalFreeServer, uvicorn_config
from inferd.engines.local import run
from inferd.engines.sockets import bind_http, listen_errors, port_of
from inferd.engines.upstream import HOP_BY_HOP, Pool, UpstreamError, relay
from inferd.server.errors import error_response

logger = logging.getLogger("inferd.engine")

#: Request headers the forwarder sets itself, or that describe one connection.
DROPPED = HOP_BY_HOP | {b"host", b"content-length", b"expect"}


class Forward:
    """An ASGI app sending every HTTP request to ``address`` (``127.0.0.1:8000``) at ``prefix`` +
    its path; ``name`` (the application's) is what a 502 says."""

    def __init__(self, address: str, prefix: str, name: str, max_body_size: int) -> None:
        self.address, self.prefix, self.name = address, prefix.rstrip("/").encode(), name
        self.max_body_size = max_body_size
        self.pool: Pool | None = None  # made on the loop it serves on

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            body = await self.body(receive)
        except PayloadTooLarge as exc:
            await error_response(exc)(scope, receive, send)
            return
        if body is None:  # the client left
            return
        self.pool = self.pool or Pool(self.address)
        try:
            connection = await self.pool.send(self.request(scope, body), scope["method"] == "HEAD")
            status, headers = await connection.head()
        except UpstreamError as exc:
            logger.warning("Ray Serve application '%s': %s", self.name, exc)
            how = "its proxy cannot be reached" if not exc.sent else "the exchange broke off"
            reason = f"Ray Serve application '{self.name}' did not answer: {how}"
            await error_response(BadGateway(reason))(scope, receive, send)
            return
        try:
            await relay(connection, status, headers, send)
        except UpstreamError:  # the answer started: all that is left is to cut it short
            connection.abort()
            return
        self.pool.release(connection)

    def request(self, scope: Scope, body: bytes) -> bytes:
        """The request as the proxy gets it: its path under the prefix, the client's headers."""
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        target = self.prefix + path + (b"?" + query if query else b"")
        fields = b"".join(
            name + b": " + value + b"\r\n" for name, value in scope["headers"] if name.lower() not in DROPPED
        )
        start = scope["method"].encode() + b" " + target + b" HTTP/1.1\r\nhost: " + self.address.encode()
        return b"%s\r\n%scontent-length: %d\r\n\r\n%s" % (start, fields, len(body), body)

    async def body(self, receive: Receive) -> bytes | None:
        """The request's body, whole; None when the client left first."""
        parts: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            part: bytes = message.get("body", b"")
            size += len(part)
            if size > self.max_body_size:
                raise PayloadTooLarge(f"request body is larger than the limit of {self.max_body_size} bytes")
            parts.append(part)
            more = message.get("more_body", False)
        return b"".join(parts)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


@contextlib.contextmanager
def serving(forward: Forward, settings: ServerSettings, port: int) -> Iterator[int]:
    """``forward`` on ``settings.host``:``port`` (0: a free one, yielded), with inferd's connection
    limits, on a thread and a uvloop of its own (on asyncio's own loop, each request waited about
    40 ms more: bench/results/ray-shared-2026-11-26.txt); its connections are closed on that loop."""
    with listen_errors(settings.host, port):
        sock = bind_http(settings.host, port)
    server = SignalFreeServer(uvicorn_config(settings, forward, settings.max_connections))
    thread = threading.Thread(
        target=run, args=(_serve(server, sock, forward),), name="inferd-forward", daemon=True
    )
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield port_of(sock)
    finally:
        server.should_exit = True
        thread.join(settings.graceful_timeout + 5)


async def _serve(server: SignalFreeServer, sock: socket.socket, forward: Forward) -> None:
    try:
        await server.serve(sockets=[sock])
    finally:
        forward.close()
