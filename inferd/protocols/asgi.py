"""Bare ASGI for the hottest routes: the body read from ``receive``, the answer written to ``send``.

Starlette's `Request` and `Response` objects, and the per-request exception wrapper a function
endpoint gets, cost about a fifth of a small inference's time in the process. An endpoint written as
an ASGI app (a `BareEndpoint`, given to `Route`) skips them, and the server calls it straight from
its middleware stack when its path is fixed (`inferd.server.routing.DirectRoutes`); its exceptions
still reach the app's exception handlers, so errors are answered exactly as on every other route.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (``name`` lower-case), as Starlette's ``headers.get``
    gives it, so a route answers the same as a bare endpoint as it did on Starlette's request."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class TextHeaders:
    """A request's headers as ``(name, value)`` text, decoded each time they are iterated: code that
    may read them costs nothing when it does not."""

    __slots__ = ("raw",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        self.raw = raw

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((key.decode("latin-1"), value.decode("latin-1")) for key, value in self.raw)


async def read_body(receive: Receive) -> bytes:
    """The whole request body; `ClientDisconnect` if the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class BodyBuffer:
    """A body of a declared length gathered as it arrives: its first piece kept as it is (most bodies
    come in one), later pieces copied once into a buffer of the declared length, so the pieces and
    their join are never alive together. The buffer is a numpy allocation: its pages are touched only
    as data arrives, so a client that declares much and sends little holds little."""

    __slots__ = ("buffer", "declared", "filled", "first")

    def __init__(self, declared: int) -> None:
        self.declared, self.first, self.filled = declared, b"", 0
        self.buffer: memoryview | None = None

    def add(self, piece: bytes) -> bool:
        """Append ``piece``; False when it would go past the declared length (nothing is kept)."""
        buffer = self.buffer
        if buffer is None:
            if not self.first:
                self.first = piece
                return len(piece) <= self.declared
            buffer = self.buffer = np.empty(self.declared, dtype=np.uint8).data
            buffer[: len(self.first)] = self.first
            self.filled, self.first = len(self.first), b""
        end = self.filled + len(piece)
        if end > self.declared:
            return False
        buffer[self.filled : end] = piece
        self.filled = end
        return True

    def whole(self) -> bytes | memoryview:
        """The body so far, read-only."""
        return self.first if self.buffer is None else self.buffer[: self.filled].toreadonly()


async def read_body_buffer(receive: Receive, scope: Scope) -> bytes | memoryview:
    """The whole request body, for routes that take big ones (binary tensors): a body that arrives
    in one message is that message's bytes, as with `read_body`; one in several messages is copied
    once, chunk by chunk, into a buffer of its Content-Length, rather than kept as chunks and then
    joined (a second copy, both alive at once). The buffer is a numpy allocation, so its pages are
    touched only as data arrives: a client that declares a large body and sends little holds
    little. Read-only, like bytes. `ClientDisconnect` if the client went away first."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientDisconnect()
    first: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return first
    declared = header(scope, b"content-length")
    if declared is None or not declared.isdigit():
        return first + await read_body(receive)  # chunked: its size is known only at its end
    body = BodyBuffer(int(declared))
    while True:
        if not body.add(message.get("body", b"")):  # more than declared: no HTTP server passes it on
            raise ClientDisconnect()
        if not message.get("more_body", False):
            return body.whole()
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()


#: A response body: bytes, or parts sent one after another (a header, then arrays' own memory),
#: so that nothing joins them into one more copy.
Body = bytes | tuple[bytes | memoryview, ...]


def body_length(body: Body) -> int:
    if isinstance(body, bytes):
        return len(body)
    return sum(part.nbytes if isinstance(part, memoryview) else len(part) for part in body)


async def send_response(send: Send, status: int, body: Body, headers: Sequence[tuple[bytes, bytes]]) -> None:
    """An answer with ``body`` and ``headers`` (names lower-case; the sequence is not kept), and its
    Content-Length where the status allows a body (as Starlette's `Response` does). A body in parts
    goes as one ASGI message per part."""
    if status >= 200 and status not in (204, 304):
        sent = [(b"content-length", str(body_length(body)).encode()), *headers]
    else:
        sent = list(headers)
    await send({"type": "http.response.start", "status": status, "headers": sent})
    if isinstance(body, bytes):
        await send({"type": "http.response.body", "body": body})
        return
    parts = body or (b"",)
    for index, part in enumerate(parts):
        await send({"type": "http.response.body", "body": part, "more_body": index < len(parts) - 1})


class Answer(NamedTuple):
    """What a bare endpoint answers: ``headers`` with lower-case names, Content-Length left out."""

    status: int
    body: Body
    headers: Sequence[tuple[bytes, bytes]]


class BareEndpoint(ABC):
    """The shape of every hot route: `answer` decodes the request, enters the data plane
    (`inferd.core.dataplane.DataPlane.call`), calls the model and encodes; the base sends it. An
    endpoint that must answer some requests with a Starlette `Response` (a CORS preflight, say)
    overrides ``__call__`` for those and calls the base for the rest."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status, body, headers = await self.answer(scope, receive)
        await send_response(send, status, body, headers)

    @abstractmethod
    async def answer(self, scope: Scope, receive: Receive) -> Answer: ...
