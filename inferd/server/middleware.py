"""Pure ASGI middleware: request ids and access log, and the request body limit."""

from __future__ import annotations

import logging
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferd.core.context import request_id
from inferd.core.errors import PayloadTooLarge
from inferd.server.errors import error_response

access_logger = logging.getLogger("inferd.access")


class RequestContext:
    """Gives every request an id (the client's ``X-Request-ID`` or a new one), echoes it in the
    response, and logs one access line per request when enabled."""

    def __init__(self, app: ASGIApp, access_log: bool) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _header(scope, b"x-request-id") or uuid.uuid4().hex
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if self.access_log:
                access_logger.info(
                    "%s %s %d",
                    scope["method"],
                    scope["path"],
                    status,
                    extra={"status": status, "duration_ms": round((time.perf_counter() - started) * 1000, 3)},
                )
            request_id.reset(token)


class BodyLimit:
    """Refuses bodies over ``max_size`` bytes, by Content-Length up front or while streaming."""

    def __init__(self, app: ASGIApp, max_size: int) -> None:
        self.app = app
        self.max_size = max_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_size:
            await error_response(self._too_large())(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_size:
                    raise self._too_large()
            return message

        await self.app(scope, limited_receive, send)

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"request body is larger than the limit of {self.max_size} bytes")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None
