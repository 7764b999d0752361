"""Bare ASGI for the hottest routes: the body read from ``receive``, the answer written to ``send``.

Starlette's `Request` and `Response` objects, and the per-request exception wrapper a function
endpoint gets, cost about a fifth of a small inference's time in the process. An endpoint written as
an ASGI app (a class instance given to `Route`) skips them; its exceptions still reach the app's
exception handlers, so errors are answered exactly as on every other route.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send


def header(scope: Scope, name: bytes) -> str | None:
    """The last value of a request header (``name`` lower-case), as Starlette's ``headers.get``."""
    found = None
    for key, value in scope["headers"]:
        if key == name:
            found = value
    return None if found is None else found.decode("latin-1")


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


async def send_response(send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]]) -> None:
    """An answer with ``body`` and ``headers`` (names lower-case; the sequence is not kept), and its
    Content-Length where the status allows a body (as Starlette's `Response` does)."""
    if status >= 200 and status not in (204, 304):
        sent = [(b"content-length", str(len(body)).encode()), *headers]
    else:
        sent = list(headers)
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": body})
