"""What one HTTP connection may cost: uvicorn's httptools protocol with the limits it lacks.

uvicorn times out idle keep-alive connections (``keep_alive_timeout`` is handed to it), but a fresh
connection that sends nothing, or a request head sent a byte at a time, is kept forever, and httptools
takes a request head of any size (a 20 MB header costs well over 20 MB). Its ``limit_concurrency``
answers a plain-text 503. This subclass adds, per connection:

- a **header timeout**: the request head must arrive within ``header_timeout`` seconds of the
  connection's opening or of the head's first byte; a partial head gets 408, nothing at all a close;
- a **header size limit**: bytes are fed to the parser only up to ``max_header_size`` while a head is
  incomplete; one byte more gets 431, so an oversized head never costs more than the limit;
- a **body timeout** (nginx's ``client_body_timeout``): once a head is whole, each part of its body
  must follow the one before within ``body_timeout`` seconds, and past the first ``body_timeout``
  seconds the body must have averaged ``min_body_rate`` bytes a second (Kestrel's minimum data rate),
  so a byte every few seconds cannot hold a connection for days; a late body gets 408. Time the
  server itself does not read (the app has not asked for more yet, a ``100-continue`` not yet sent, a
  pipelined request waiting its turn) does not count;
- a **connection limit**: a connection opened while ``max_connections`` others are open makes room
  by closing the one idle the longest (sent nothing yet, or waits between requests), as a keep-alive
  timeout would have later: idle sockets cannot lock real clients out. When none is idle, the one
  still *receiving* a request (a head or a body not yet whole, nothing answered yet) that went the
  longest without sending a byte is closed (its request answered 503 if it can still read it): clients
  that trickle requests cannot lock real ones out either. When every other connection is being
  answered, the new connection's request gets inferd's JSON 503 with ``Retry-After``, and it is closed.

A refusal by the connection (408, 431) is written here, from the status table like every other
error, then the server stops sending and drops what the client still sends for ``LINGER_SECONDS``:
closing a socket with unread bytes makes the kernel reset the connection, and the client would never
read the answer. An answer the app gave before reading the whole body (401, 403, 413...) ends the
connection the same way instead of waiting for the rest of a body nobody reads. The limits count per
uvicorn server (per worker process).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from starlette.types import ASGIApp, Message
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

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
    body_timeout: float = 30.0
    min_body_rate: int = 240


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
        # A body being received: its timer, when it began, its bytes, when its last part came (or
        # the server last held it up), when the timer last looked.
        self.body_timer: asyncio.TimerHandle | None = None
        self.body_began = self.body_bytes = self.body_seen = self.body_checked = 0.0
        self.last_byte = self.idle_since  # when the client last sent anything (rank to make room)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Counted once it joins the server's connections (uvloop's transports are ``Transport`` in
        all but name, so uvicorn's annotation is narrower than what the loop passes)."""
        super().connection_made(cast(asyncio.Transport, transport))
        if len(self.connections) > self.limits.max_connections:
            self.over_limit = not self.make_room()
        self.arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self.head_timer, self.linger_timer, self.body_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # lingering after a refusal: what the client still sends is dropped
        self.last_byte = self.loop.time()
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
        if self.in_head:
            if not self.message_ended:
                self.head_bytes += len(data)
        elif not self.refused:  # a body is on its way
            self.body_received(len(data))
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
        if self.cycle is not None:
            _close_when_answered_early(self.cycle)

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
        self.cancel_body_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.idle_since = self.loop.time()
        cycle = self.cycle
        if not (self.in_head or self.refused or self.transport.is_closing()) and cycle.response_complete:
            # the request whose body arrives (not one pipelined behind the answer) was answered
            # before its body was whole (401, 413...): the rest is not waited for
            logger.debug("%s answered before its request body was read: closed", self.peer())
            self.linger()

    # Limits
    def make_room(self) -> bool:
        """When the others fill the limit, close one that loses least: a refused one (answered,
        lingering), else the one idle the longest, else the one receiving a request that sent nothing
        for the longest. False when they fill it and every one of them is being answered (this one is
        then past the limit)."""
        others = [
            other
            for other in self.connections
            if other is not self
            and isinstance(other, LimitedHttpToolsProtocol)
            and not other.transport.is_closing()
        ]
        if len(others) < self.limits.max_connections:
            return True
        lingering = next((other for other in others if other.refused), None)
        if lingering is not None:
            lingering.transport.close()
            return True
        idle = [other for other in others if other.idle()]
        if idle:
            idlest = min(idle, key=lambda other: other.idle_since)
            logger.debug(
                "%d HTTP connections are open: %s, idle the longest, closed", len(others), idlest.peer()
            )
            idlest.transport.close()
            return True
        receiving = [other for other in others if other.receiving()]
        if not receiving:
            logger.warning("%d HTTP connections are open and busy: a new one is answered 503", len(others))
            return False
        slowest = min(receiving, key=lambda other: other.last_byte)
        logger.info(
            "%d HTTP connections are open: %s, receiving a request and silent the longest, closed",
            len(others),
            slowest.peer(),
        )
        slowest.evict()
        return True

    def idle(self) -> bool:
        """Nothing of a request received, nothing being answered: closing loses nothing."""
        return self.in_head and not self.head_started and not self.refused and not self.answering()

    def receiving(self) -> bool:
        """A request (head or body) is arriving and nothing of this connection is being answered:
        closing it loses only what its client has not finished sending."""
        if self.refused or self.pipeline:
            return False
        if self.in_head:
            return self.head_started and not self.answering()
        return not self.response_started()

    def response_started(self) -> bool:
        cycle = self.cycle
        return cycle is not None and bool(cycle.response_started)

    def evict(self) -> None:
        """Close this connection to make room for another; its request, if its client still reads,
        is answered 503."""
        if self.abandon_request() or self.in_head:
            limit = self.limits.max_connections
            self.transport.write(
                self.raw_answer(Overloaded(f"the server has {limit} connections open; retry later"))
            )
        self.transport.close()

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

    def abandon_request(self) -> bool:
        """The request whose body is arriving, nothing answered of it nor waiting before it, is given
        up: its app sees its client gone (``http.disconnect``), so that the connection answers in its
        place. False when there is no such request."""
        cycle = self.cycle
        if self.in_head or self.pipeline or cycle is None or self.response_started():
            return False
        cycle.disconnected = True
        cycle.message_event.set()
        return True

    # Body timeout
    def body_received(self, size: int) -> None:
        now = self.loop.time()
        if self.body_timer is None:
            self.body_began, self.body_bytes, self.body_checked = now, 0, now
            self.body_timer = self.loop.call_later(self.limits.body_timeout, self.check_body)
        self.body_bytes += size
        self.body_seen = now

    def cancel_body_timer(self) -> None:
        if self.body_timer is not None:
            self.body_timer.cancel()
            self.body_timer = None

    def held_by_server(self) -> bool:
        """The server does not read the body now: the app has not asked for more (uvicorn stops
        reading past its buffer), a ``100-continue`` is not sent yet, or the request waits its turn."""
        cycle = self.cycle
        return (
            self.flow.read_paused
            or bool(self.pipeline)
            or bool(getattr(cycle, "waiting_for_100_continue", False))
        )

    def check_body(self) -> None:
        """Every ``body_timeout`` seconds at most while a body arrives: 408 if none of it came for
        that long, or (past the first ``body_timeout`` seconds) it arrives slower than
        ``min_body_rate``."""
        self.body_timer = None
        if self.in_head or self.refused or self.transport.is_closing():
            return
        now, timeout, rate = self.loop.time(), self.limits.body_timeout, self.limits.min_body_rate
        if self.held_by_server():  # the time since the last look is not the client's
            self.body_began += now - max(self.body_checked, self.body_began)
            self.body_seen = now
        self.body_checked = now
        if now - self.body_seen >= timeout:
            self.refuse(ClientTimeout(f"no part of the request body received for {timeout:g} seconds"))
            return
        elapsed = now - self.body_began
        if rate and elapsed >= timeout and self.body_bytes < rate * elapsed:
            self.refuse(ClientTimeout(f"the request body arrives slower than {rate} bytes a second"))
            return
        wait = max(0.01, min(timeout, self.body_seen + timeout - now))
        self.body_timer = self.loop.call_later(wait, self.check_body)

    def refuse(self, error: InferdError) -> None:
        """Answer ``error`` and close the connection once its client had a chance to read it (a
        request whose body was arriving is given up)."""
        self.cancel_head_timer()
        logger.info("%s refused: %s", self.peer(), error.message)
        if not self.abandon_request() and self.answering():
            # an answer in progress cannot be interrupted by another one
            self.transport.close()
            return
        self.transport.write(self.raw_answer(error))
        self.linger()

    def linger(self) -> None:
        """Stop sending, drop what the client still sends, close in ``LINGER_SECONDS``."""
        self.refused = True
        self.cancel_head_timer()
        self.cancel_body_timer()
        self._unset_keepalive_if_required()
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


def _close_when_answered_early(cycle: RequestResponseCycle) -> None:
    """An answer that starts before its request's body is whole (401, 403, 413 without reading it)
    says ``Connection: close``, so the client does not send its next request on a connection that ends
    once the answer is written (`LimitedHttpToolsProtocol.on_response_complete` lingers, then closes).
    The connection is not closed by uvicorn at the answer's end (``keep_alive`` is set again once the
    header is written): closing with the rest of the body unread would reset it before the client read
    the answer."""
    send = cycle.send

    async def sending(message: Message) -> None:
        if message["type"] != "http.response.start" or not cycle.more_body:
            await send(cast(Any, message))
            return
        headers = [*message.get("headers", ()), (b"connection", b"close")]
        await send(cast(Any, {**message, "headers": headers}))
        cycle.keep_alive = True

    cycle.send = sending  # type: ignore[method-assign,assignment]
