"""inferd's ASGI app behind granian's RSGI interface: V2 infer through `inferd.server.fast.FastInfer`
straight from the RSGI call, every other request through a small RSGI → ASGI bridge.

RSGI hands Python the parsed request (the head parsed, the body read, by granian's Rust) and takes
the whole answer in one call, which costs less than an ASGI cycle; granian's own ASGI interface
builds the ASGI messages from Rust and was slower than uvicorn here. The bridge gives the app what
an ASGI server does: the scope, the body as it streams in (so the request middleware's body limit
holds on bodies without a length), ``http.disconnect`` once the client leaves, and an answer whole
(`response_bytes`) or streamed (`response_stream`). It counts the requests in flight, so a server
stopping can wait for them (`InFlight`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.types import ASGIApp, Message

from inferd.server.fast import FastInfer

Headers = list[tuple[bytes, bytes]]


class InFlight:
    """The requests being answered; `idle` is set while there are none."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = asyncio.Event()
        self.idle.set()

    def enter(self) -> None:
        self.count += 1
        self.idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()


class RsgiApp:
    """The RSGI application granian calls (``__rsgi__``) for an ASGI ``app`` and its ``fast`` path."""

    def __init__(self, app: ASGIApp, fast: FastInfer | None) -> None:
        self.app, self.fast = app, fast
        self.in_flight = InFlight()

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":  # inferd serves no WebSocket routes
            return
        self.in_flight.enter()
        try:
            headers = [
                (key.encode("latin-1"), value.encode("latin-1")) for key, value in scope.headers.items()
            ]
            fast = self.fast
            request = None
            if fast is not None and not scope.query_string:
                request = fast.take(scope.method.encode(), scope.path, headers)
            if request is None:
                await Bridge(scope, protocol, headers).run(self.app)
                return
            assert fast is not None
            status, body, answer = await fast.answer(request, await protocol())
            # RSGI takes one bytes object: binary tensor parts are joined here (one copy out)
            protocol.response_bytes(
                status, _text(answer), body if isinstance(body, bytes) else b"".join(body)
            )
        finally:
            self.in_flight.leave()


def _raw(headers: Any) -> Headers:
    return [(key.encode("latin-1"), value.encode("latin-1")) for key, value in headers]


def _text(headers: Any) -> list[tuple[str, str]]:
    return [(key.decode("latin-1"), value.decode("latin-1")) for key, value in headers]


def _address(text: str) -> tuple[str, int] | None:
    host, _, port = text.rpartition(":")
    return (host.strip("[]"), int(port)) if port.isdigit() else None


class Bridge:
    """One ASGI cycle over one RSGI call."""

    def __init__(self, scope: Any, protocol: Any, headers: Headers) -> None:
        self.protocol = protocol
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": scope.http_version.removeprefix("HTTP/"),
            "method": scope.method,
            "scheme": scope.scheme,
            "path": scope.path,
            "raw_path": scope.path.encode(),
            "query_string": scope.query_string.encode("latin-1"),
            "root_path": "",
            "headers": headers,
            "client": _address(scope.client),
            "server": _address(scope.server),
            "state": {},
        }
        self.chunks: AsyncIterator[bytes] | None = None
        self.body_done = False
        self.start: Message | None = None
        self.stream: Any = None
        self.complete = False

    async def run(self, app: ASGIApp) -> None:
        await app(self.scope, self.receive, self.send)
        if not self.complete:  # an app that answered nothing, or stopped mid-stream
            if self.start is None:
                self.protocol.response_empty(500, [])

    async def receive(self) -> Message:
        if self.body_done or self.complete:
            await self.protocol.client_disconnect()
            return {"type": "http.disconnect"}
        if self.chunks is None:
            self.chunks = self.protocol.__aiter__()
        try:
            chunk = await self.chunks.__anext__()
        except StopAsyncIteration:
            self.body_done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.request", "body": bytes(chunk), "more_body": True}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        if message["type"] != "http.response.body" or self.start is None or self.complete:
            return
        body, more = message.get("body", b""), message.get("more_body", False)
        status, headers = self.start["status"], _text(self.start.get("headers", ()))
        if self.stream is None and not more:
            self.protocol.response_bytes(status, headers, body)
            self.complete = True
            return
        if self.stream is None:
            self.stream = self.protocol.response_stream(status, headers)
        if body:
            await self.stream.send_bytes(body)
        if not more:
            self.complete = True
