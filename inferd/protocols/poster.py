"""HTTP/1.1 POSTs to one URL, fired and forgotten: pipelined over a few keep-alive connections.

For a sender that must cost the process next to nothing per request and never wait for the peer
(payload logging): `Poster.post` only appends to a queue; once per turn of the event loop the queue
is written, each request encoded straight to bytes, as many as fit in one ``write`` on one
connection (HTTP/1.1 pipelining), and the answers are parsed by httptools as they arrive, in order.
No task or future per request: a general client (httpx) spends some hundred microseconds of Python
and several turns of the loop on each, which a saturated server cannot spare.

What each request became is reported once: ``answered(tag, status)`` or ``failed(tag, reason)``.
Nothing written is retried (the peer may have acted on it), with one exception: requests pipelined
behind an answer that closes the connection (``Connection: close``) were not read by the peer
(RFC 9112 9.3.2), so they go back to the front of the queue. A connection on which nothing arrives
for ``timeout`` seconds while answers are awaited is aborted and its requests failed. When the peer
cannot be reached, what is queued fails and connecting is tried again after a back-off.
"""

from __future__ import annotations

import asyncio
import ssl
from base64 import b64encode
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar, cast
from urllib.parse import SplitResult, unquote, urlsplit

import httptools

T = TypeVar("T")
#: Connections per poster: a peer answering a request at a time on each still gets some parallelism.
CONNECTIONS = 4
#: Requests awaiting an answer on one connection; more wait in the queue.
DEPTH = 128
#: Seconds a request waits in the queue for others to be written with it: one write (a system call,
#: and the peer woken once) for many requests.
LINGER = 0.005
#: Seconds before connecting again after a failure: the first wait, doubled up to the last.
BACKOFF = (0.05, 2.0)


class Poster(Generic[T]):
    """POSTs to ``url`` (http or https), each made from a ``tag`` by ``encode``: its header lines
    (``name: value\\r\\n`` each, without Host and Content-Length) and its body. Runs on the loop it
    is made on."""

    def __init__(
        self,
        url: str,
        timeout: float,
        encode: Callable[[T], tuple[bytes, bytes]],
        answered: Callable[[T, int], None],
        failed: Callable[[T, str], None],
        connections: int = CONNECTIONS,
        depth: int = DEPTH,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        #: Every request's start, up to its Content-Length's value.
        self.prefix = request_prefix(parts)
        self.ssl = _client_context() if parts.scheme == "https" else None
        self.url, self.timeout, self.encode = url, timeout, encode
        self.answered, self.failed = answered, failed
        self.connections, self.depth = connections, depth
        self.loop = asyncio.get_running_loop()
        self.queue: deque[T] = deque()
        self.open: list[_Connection[T]] = []
        self.connecting: set[asyncio.Task[None]] = set()
        self.retry_at, self.backoff = 0.0, BACKOFF[0]
        self.scheduled = self.closed = False

    def post(self, tag: T) -> None:
        """Send ``tag``'s request soon: within this turn of the loop when a connection is open."""
        self.queue.append(tag)
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_later(LINGER, self.flush)

    def flush(self) -> None:
        """Write what is queued, a batch per connection with room, the least busy first; connect
        another when every connection is busy."""
        self.scheduled = False
        queue, depth = self.queue, self.depth
        while queue and self.open:
            connection = min(self.open, key=_in_flight)
            room = depth - len(connection.waiting)
            if room <= 0:
                break
            connection.send([queue.popleft() for _ in range(min(room, len(queue)))])
        if queue or all(connection.waiting for connection in self.open):
            self.grow()

    def wake(self) -> None:
        """Room was made on a connection: write what waits for it, this turn."""
        if self.queue and not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.flush)

    def grow(self) -> None:
        if self.closed or len(self.open) + len(self.connecting) >= self.connections:
            return
        if self.connecting or self.loop.time() < self.retry_at:
            return  # one attempt at a time; none while backing off
        task = self.loop.create_task(self.connect())
        self.connecting.add(task)
        task.add_done_callback(self.connecting.discard)

    async def connect(self) -> None:
        try:
            _, connection = await asyncio.wait_for(
                self.loop.create_connection(lambda: _Connection(self), self.host, self.port, ssl=self.ssl),
                self.timeout,
            )
        except (OSError, TimeoutError) as exc:  # refused, unreachable, TLS refused (SSLError), slow
            self.unreachable(f"cannot connect: {exc!r}")
            return
        self.backoff = BACKOFF[0]
        self.open.append(connection)
        self.flush()

    def unreachable(self, reason: str) -> None:
        """Connecting failed: back off; with no connection open, what is queued fails."""
        self.retry_at = self.loop.time() + self.backoff
        self.loop.call_at(self.retry_at, self.retry)
        self.backoff = min(self.backoff * 2, BACKOFF[1])
        if not self.open:
            self.fail(self.queue, reason)
            self.queue.clear()

    def retry(self) -> None:
        if self.queue:
            self.flush()

    def fail(self, tags: Iterable[T], reason: str) -> None:
        failed = self.failed
        for tag in tags:
            failed(tag, reason)

    def lost(self, connection: _Connection[T], unread: Iterable[T]) -> None:
        """``connection`` is closed; ``unread``: requests the peer did not read, to send again."""
        if connection in self.open:
            self.open.remove(connection)
        self.queue.extendleft(reversed(list(unread)))
        if not self.closed:
            self.wake()

    def close(self) -> list[T]:
        """Stop at once: abort the connections; returns the tags neither answered nor failed."""
        self.closed = True
        left = list(self.queue)
        self.queue.clear()
        for task in self.connecting:
            task.cancel()
        for connection in self.open:
            left.extend(connection.waiting)
            connection.waiting.clear()
            connection.abort("closed")
        self.open.clear()
        return left


def request_prefix(url: SplitResult) -> bytes:
    """The request line and the headers every POST to ``url`` starts with: Host, the credentials
    the URL holds (``user:password@``, as Basic authorization, as httpx sends them), and the name of
    the Content-Length header, whose value follows."""
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    host = url.hostname or ""
    host = f"[{host}]" if ":" in host else host.encode("idna").decode()
    lines = [f"POST {target} HTTP/1.1", f"Host: {host}" + (f":{url.port}" if url.port else "")]
    if url.username is not None or url.password is not None:
        credentials = f"{unquote(url.username or '')}:{unquote(url.password or '')}".encode()
        lines.append(f"Authorization: Basic {b64encode(credentials).decode()}")
    return "\r\n".join([*lines, "Content-Length: "]).encode()


def _in_flight(connection: _Connection[T]) -> int:
    return len(connection.waiting)


def _client_context() -> ssl.SSLContext:
    """The TLS settings httpx uses (certifi's CAs, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``)."""
    import httpx  # only for https sinks

    return httpx.create_ssl_context()


class _Connection(asyncio.Protocol, Generic[T]):
    """One keep-alive connection; ``waiting``: the requests written, in order, not yet answered."""

    def __init__(self, poster: Poster[T]) -> None:
        self.poster = poster
        self.loop = poster.loop
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[T] = deque()
        self.status = 0  # of the answer being read; 0 until its head was read
        self.closing = False  # the peer said it closes: nothing more is written
        self.reason = "the sink closed the connection"
        self.progress = 0.0  # when the peer was last heard from (or the first request written)
        self.timer: asyncio.TimerHandle | None = None

    def send(self, tags: list[T]) -> None:
        """Write the requests of ``tags`` in one go (those that cannot be encoded fail)."""
        poster = self.poster
        encode, prefix = poster.encode, poster.prefix
        parts: list[bytes] = []
        sent: list[T] = []
        for tag in tags:
            try:
                head, body = encode(tag)
            except (ValueError, UnicodeError) as exc:  # a value no header may hold
                poster.failed(tag, f"cannot be sent: {exc}")
                continue
            parts += (prefix, b"%d\r\n" % len(body), head, b"\r\n", body)
            sent.append(tag)
        if not sent:
            return
        if not self.waiting:
            self.progress = self.loop.time()
            if self.timer is None:
                self.timer = self.loop.call_at(self.progress + poster.timeout, self.check)
        self.waiting.extend(sent)
        cast(asyncio.Transport, self.transport).write(b"".join(parts))

    def check(self) -> None:
        """The timer: abort when the peer owes answers and was silent for ``timeout`` seconds."""
        self.timer = None
        if not self.waiting:
            return
        due = self.progress + self.poster.timeout
        if self.loop.time() >= due:
            self.abort(f"no answer within {self.poster.timeout:g} s")
        else:
            self.timer = self.loop.call_at(due, self.check)

    def abort(self, reason: str) -> None:
        self.reason = reason
        if self.transport is not None:
            self.transport.abort()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are Transports but for the name

    def data_received(self, data: bytes) -> None:
        self.progress = self.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.status = 0  # the answer being read is no answer: its request fails
            self.abort(f"the sink's answer is not HTTP/1.1: {exc}")

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        waiting, poster = self.waiting, self.poster
        if self.status >= 200 and waiting:  # an answer framed by the connection's end
            poster.answered(waiting.popleft(), self.status)
        unread = list(waiting) if self.closing else []
        if not self.closing:
            poster.fail(waiting, self.reason if exc is None else f"{self.reason}: {exc!r}")
        waiting.clear()
        poster.lost(self, unread)

    # httptools callbacks
    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_message_complete(self) -> None:
        status = self.status
        if status < 200:  # an interim answer (1xx): the real one follows
            return
        self.status = 0
        if not self.waiting:
            self.abort("the sink answered a request it was not sent")
            return
        poster = self.poster
        poster.answered(self.waiting.popleft(), status)
        if poster.queue and not poster.scheduled:
            poster.wake()
        if not self.parser.should_keep_alive():
            self.closing = True
            poster.lost(self, ())  # out of the open list now; its unread requests follow
            if self.transport is not None:
                self.transport.close()
