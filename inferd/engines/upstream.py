"""An HTTP/1.1 client: keep-alive connections to one upstream, parsed by httptools (the platform
gateway's, and the Ray engine's forwarder, `inferd.engines.forward`).

One `Connection` carries one exchange at a time (no pipelining): the gateway writes a request, then
reads the answer's head (`head`) and its body piece by piece (`body`); content-length, chunked and
read-until-close answers alike. Reading pauses while more than ``HIGH_WATER`` bytes wait for a slow
client, so a large answer never sits whole in memory.

A `Pool` keeps at most ``max_idle`` idle connections, newest first, and drops those idle for longer
than ``idle_timeout`` (keep it below the upstream's keep-alive timeout: uvicorn's default is 5 s,
inferd's 30 s), so the upstream rarely closes a connection just as a request is written on it. A
connection that turns out closed before anything was written on it is replaced by a fresh one, once
(`Pool.send`); after a byte was written nothing is retried, as the upstream may have acted on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import cast

import httptools
from starlette.types import Send

#: Answer headers that describe one connection, not the answer (RFC 9110 7.6.1), never passed on.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Bytes of an answer's body buffered for the client before reading from the upstream pauses.
HIGH_WATER = 1024 * 1024
Headers = list[tuple[bytes, bytes]]


class UpstreamError(Exception):
    """The upstream could not be reached, closed the connection or sent something that is not HTTP.
    ``sent``: whether any byte of the request had been written (then the request is not retried)."""

    def __init__(self, message: str, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


class UpstreamTimeout(UpstreamError):
    """The upstream sent nothing for ``read_timeout`` seconds while an answer was awaited."""


def connection_tokens(value: bytes) -> Iterable[bytes]:
    """The header names a ``Connection`` header lists (they are hop-by-hop too)."""
    return (token.strip().lower() for token in value.split(b","))


class Connection(asyncio.Protocol):
    """One keep-alive connection to the upstream of ``pool``."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.loop = pool.loop
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self.can_write: asyncio.Future[None] | None = None
        self.reset(False)

    def reset(self, head_request: bool) -> None:
        """Ready for a new exchange (``head_request``: a HEAD, whose answer has no body)."""
        self.head_request = head_request
        self.status = 0
        self.headers: Headers = []
        self.drop: frozenset[bytes] | set[bytes] = HOP_BY_HOP
        self.interim = False  # reading a 1xx answer, which the real one follows
        self.head_done = False
        self.framed = False  # the answer has Content-Length or Transfer-Encoding
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.complete = False
        self.keep_alive = False
        self.error: UpstreamError | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """uvloop's transports are ``Transport`` in all but name (not subclasses)."""
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.fail(UpstreamError(f"the upstream's answer is not HTTP/1.1: {exc}"))
            self.abort()

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.discard(self)
        if self.head_done and not self.complete and self.reads_until_close():
            self.complete = True  # an answer framed by the end of the connection
            self.wake()
        elif not self.complete:
            self.fail(UpstreamError("the upstream closed the connection before it answered"))
        if self.can_write is not None and not self.can_write.done():
            self.can_write.set_result(None)

    def pause_writing(self) -> None:
        self.can_write = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.can_write is not None and not self.can_write.done():
            self.can_write.set_result(None)
        self.can_write = None

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"connection":
            self.drop = self.drop | set(connection_tokens(value))  # every Connection header counts
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:  # 1xx: an interim answer; the real one follows on the same connection
            self.interim, self.headers, self.drop = True, [], HOP_BY_HOP
            return
        self.status = status
        # read before the hop-by-hop headers go: Transfer-Encoding is one of them
        self.framed = any(name in (b"content-length", b"transfer-encoding") for name, _ in self.headers)
        self.headers = [(name, value) for name, value in self.headers if name not in self.drop]
        self.head_done = True
        if self.head_request:  # a HEAD answer has no body whatever its headers say; the parser
            self.complete = True  # does not know the request, so this connection is not reused
        self.wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self.wake()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.keep_alive = self.parser.should_keep_alive() and not self.head_request
        self.complete = True
        self.wake()

    # The exchange, as the gateway drives it
    def write(self, data: bytes) -> bool:
        """Write ``data``; False (nothing written) when the connection is closed or closing."""
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            return False
        transport.write(data)
        return True

    async def drain(self) -> None:
        """Wait while the upstream reads slower than the request body arrives."""
        if self.can_write is not None:
            await self.can_write
        if self.closed and self.error is not None:
            raise self.error

    async def head(self) -> tuple[int, Headers]:
        """The answer's status and headers (hop-by-hop ones removed)."""
        while not self.head_done:
            await self.wait()
        return self.status, self.headers

    async def body(self) -> tuple[bytes, bool]:
        """The body received since the last call (waiting for some) and whether more follows."""
        while True:
            chunks = self.chunks
            if chunks:
                data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                self.chunks, self.buffered = [], 0
                if self.paused and self.transport is not None:
                    self.paused = False
                    self.transport.resume_reading()
                return data, not self.complete
            if self.complete:
                return b"", False
            await self.wait()

    async def wait(self) -> None:
        """Wait for the parser to make progress, at most ``read_timeout`` seconds."""
        if self.error is not None:
            raise self.error
        waiter = self.waiter = self.loop.create_future()
        timer = self.loop.call_later(self.pool.read_timeout, self.timed_out, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self.waiter = None
        if self.error is not None:
            raise self.error

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def fail(self, error: UpstreamError) -> None:
        if self.error is None:
            self.error = error
        self.wake()

    def timed_out(self, waiter: asyncio.Future[None]) -> None:
        if waiter is self.waiter and not waiter.done():
            self.fail(UpstreamTimeout(f"the upstream sent nothing for {self.pool.read_timeout:g} seconds"))
            self.abort()

    def reads_until_close(self) -> bool:
        """The answer has neither Content-Length nor Transfer-Encoding: the connection's end ends
        it. (An answer that has one and ends early is cut short, not complete.)"""
        return not self.framed

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self.error is None

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Pool:
    """Keep-alive connections to ``host:port``."""

    def __init__(
        self,
        address: str,
        max_idle: int = 64,
        idle_timeout: float = 4.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.address, self.host, self.port = address, host.strip("[]"), int(port)
        self.max_idle, self.idle_timeout = max_idle, idle_timeout
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.loop = asyncio.get_running_loop()
        self.idle: list[Connection] = []

    async def send(self, data: bytes, head_request: bool = False) -> Connection:
        """A connection on which ``data`` (a request head, and its body or the start of it) was
        written: an idle one, or a new one when none is idle or the one taken was closed before
        anything was written on it."""
        connection = self.take()
        if connection is not None:
            connection.reset(head_request)
            if connection.write(data):
                return connection
        connection = await self.connect()
        connection.reset(head_request)
        if not connection.write(data):
            raise UpstreamError("the upstream closed a new connection at once", sent=False)
        return connection

    def take(self) -> Connection | None:
        """The idle connection used last, closing those idle too long."""
        idle = self.idle
        now = self.loop.time()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self.idle_timeout:
                connection.reused = True
                return connection
            connection.abort()
        return None

    async def connect(self) -> Connection:
        try:
            _, connection = await asyncio.wait_for(
                self.loop.create_connection(lambda: Connection(self), self.host, self.port),
                self.connect_timeout,
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise UpstreamError(f"cannot connect to {self.address}: {exc}", sent=False) from None
        return connection

    def release(self, connection: Connection) -> None:
        """Keep ``connection`` for the next request when its answer was read in full and the
        upstream keeps it open, else close it."""
        if connection.reusable() and len(self.idle) < self.max_idle:
            connection.idle_since = self.loop.time()
            self.idle.append(connection)
        elif connection.complete and connection.transport is not None:
            connection.closed = True
            connection.transport.close()  # the answer was read: a clean close
        else:
            connection.abort()

    def discard(self, connection: Connection) -> None:
        """``connection`` was closed by the upstream; forget it if it was idle."""
        try:
            self.idle.remove(connection)
        except ValueError:
            pass

    def close(self) -> None:
        while self.idle:
            self.idle.pop().abort()


async def relay(connection: Connection, status: int, headers: Headers, send: Send) -> None:
    """The answer passed on to an ASGI ``send``: its head, then its body piece by piece as it
    arrives; an UpstreamError when the upstream breaks off after the answer started."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    more = True
    while more:
        data, more = await connection.body()
        await send({"type": "http.response.body", "body": data, "more_body": more})
