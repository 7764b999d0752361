"""What one HTTP connection may cost: uvicorn's httptools protocol with the limits it lacks.

uvicorn times out idle keep-alive connections (``keep_alive_timeout`` is handed to it), but a fresh
connection that sends nothing, or a request head sent a byte at a time, is kept forever, and httptools
takes a request head of any size (a 20 MB header costs well over 20 MB). Its ``limit_concurrency``
answers a plain-text 503. This subclass adds, per connection:

- a **header timeout**: the request head must arrive within ``header_timeout`` seconds of the
  connection's opening or of the head's first byte; a partial head gets 408, nothing at all a close;
- a **header size limit**: bytes are fed to the parser only up to ``max_header_size`` while a head is
  incomplete; one byte more gets 431, so an oversized head never costs more than the limit;
- a **connection limit**: a connection opened while ``max_connections`` others are open makes room
  by closing the one idle the longest (sent nothing yet, or waits between requests), as a keep-alive
  timeout would have later: idle sockets cannot lock real clients out. When none is idle, the new
  connection's request gets inferd's JSON 503 with ``Retry-After``, and the connection is closed.

A refusal before the app runs (408, 431) is written here, from the status table like every other
error, then the server stops sending and drops what the client still sends for ``LINGER_SECONDS``:
closing a socket with unread bytes makes the kernel reset the connection, and the client would never
read the answer. The limits count per uvicorn server (per worker process).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from inferd.core.errors import ClientTimeout, HeadersTooLarge, InferdError, Overloaded
from inferd.protocols.json import dumps
from inferd.protocols.status import error_body, error_headers, status_of
from inferd.server.errors import error_response

logger = logging.getLogger("inferd.engine")
#: How long a refused connection keeps reading (and dropping) what its client still sends.
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    max_header_size: int
    max_connections: int


def limited_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """The protocol class a uvicorn server of these limits instantiates per connection."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limits": limits})


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_head = True  # the next bytes belong to a request head
        self.head_started = False  # the parser has seen the first byte of that head
        self.head_bytes = 0  # bytes of that head fed to the parser so far
        self.message_ended = False  # a request ended in the bytes being fed
        self.refused = False
        self.head_timer: asyncio.TimerHandle | None = None
        self.linger_timer: asyncio.TimerHandle | None = None
        self.over_limit = False
        self.idle_since = self.loop.time()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Counted once it joins the server's connections (uvloop's transports are ``Transport`` in
        all but name, so uvicorn's annotation is narrower than what the loop passes)."""
        super().connection_made(cast(asyncio.Transport, transport))
        if len(self.connections) > self.limits.max_connections:
            self.over_limit = not self.make_room()
        self.arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self.head_timer, self.linger_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # lingering after a refusal: what the client still sends is dropped
        if not self.in_head:
            self.feed(data)
            return
        self.arm_head_timer()
        budget = max(0, self.limits.max_header_size - self.head_bytes)
        if len(data) <= budget:  # the usual case: no copy
            self.feed(data)
            return
        head, rest = data[:budget], data[budget:]
        ended = self.feed(head) if head else False
        if not rest or self.refused or self.transport.is_closing():
            return
        if self.in_head and not ended:  # the same head goes on past the limit
            limit = self.limits.max_header_size
            self.refuse(HeadersTooLarge(f"request headers are larger than the limit of {limit} bytes"))
        else:
            self.data_received(rest)

    def feed(self, data: bytes) -> bool:
        """Parse ``data``, counting it towards the head being read; returns whether a request ended in
        it (then the bytes after that end are not counted: a pipelined head may get a little more)."""
        self.message_ended = False
        super().data_received(data)
        if self.in_head and not self.message_ended:
            self.head_bytes += len(data)
        return self.message_ended

    # Parser callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_started = True

    def on_headers_complete(self) -> None:
        self.head_ended()
        if self.over_limit:
            self.app = self.overloaded()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.request_ended()

    def head_ended(self) -> None:
        """A request's head is whole: its body (if any) follows, not counted towards the head."""
        self.in_head = False
        self.cancel_head_timer()

    def request_ended(self) -> None:
        """A request is whole: the next bytes begin a head."""
        self.in_head, self.head_started, self.head_bytes, self.message_ended = True, False, 0, True

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.idle_since = self.loop.time()

    # Limits
    def make_room(self) -> bool:
        """Close the connection idle the longest if the others fill the limit; False when they do and
        none of them is idle (this one is then past the limit)."""
        others = [
            other
            for other in self.connections
            if other is not self
            and isinstance(other, LimitedHttpToolsProtocol)
            and not other.transport.is_closing()
        ]
        if len(others) < self.limits.max_connections:
            return True
        idle = [other for other in others if other.idle()]
        if len(others) - min(1, len(idle)) >= self.limits.max_connections:
            logger.warning("%d HTTP connections are open and busy: a new one is answered 503", len(others))
            return False
        idlest = min(idle, key=lambda other: other.idle_since)
        logger.debug("%d HTTP connections are open: %s, idle the longest, closed", len(others), idlest.peer())
        idlest.transport.close()
        return True

    def idle(self) -> bool:
        """Nothing of a request received, nothing being answered: closing loses nothing."""
        return self.in_head and not self.head_started and not self.refused and not self.answering()

    def overloaded(self) -> ASGIApp:
        """The answer of a request on a connection past the limit, closing it."""
        limit = self.limits.max_connections
        response = error_response(Overloaded(f"the server has {limit} connections open; retry later"))
        response.headers["connection"] = "close"
        return response

    def arm_head_timer(self) -> None:
        if self.head_timer is None:
            self.head_timer = self.loop.call_later(self.limits.header_timeout, self.head_timed_out)

    def cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def head_timed_out(self) -> None:
        self.head_timer = None
        if self.transport.is_closing() or not self.in_head:
            return
        if self.answering():  # a pipelined head waits while an earlier answer is written
            self.arm_head_timer()
        elif self.head_started:
            timeout = self.limits.header_timeout
            self.refuse(ClientTimeout(f"request headers not received within {timeout:g} seconds"))
        else:
            logger.debug(
                "%s sent no request within %g seconds: closed", self.peer(), self.limits.header_timeout
            )
            self.transport.close()

    def answering(self) -> bool:
        """An earlier request of this connection is still being answered (or waits its turn)."""
        return bool(self.pipeline) or (self.cycle is not None and not self.cycle.response_complete)

    def refuse(self, error: InferdError) -> None:
        """Answer ``error`` and close the connection once its client had a chance to read it."""
        self.cancel_head_timer()
        logger.info("%s refused: %s", self.peer(), error.message)
        if self.answering():  # an answer in progress cannot be interrupted by another one
            self.transport.close()
            return
        self.refused = True
        self.transport.write(self.raw_answer(error))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.resume_reading()
        self.linger_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def raw_answer(self, error: InferdError) -> bytes:
        """``error`` as inferd answers it everywhere (status table, JSON body), as bytes on the wire."""
        body = dumps(error_body(error))
        headers = [
            *self.server_state.default_headers,
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *((name.lower().encode(), value.encode()) for name, value in error_headers(error).items()),
            (b"connection", b"close"),
        ]
        lines = [
            STATUS_LINE[status_of(error).http],
            *(name + b": " + value + b"\r\n" for name, value in headers),
        ]
        return b"".join([*lines, b"\r\n", body])

    def peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
