"""The one pure ASGI middleware of every request: its id, the body limit, the answer to unexpected
errors, and the access log.

One layer instead of three: every ASGI layer costs a call per message on the hot path.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferd.core.context import request_id
from inferd.core.errors import PayloadTooLarge
from inferd.server.errors import error_response, log_unexpected
from inferd.server.limits import BodyLimit

access_logger = logging.getLogger("inferd.access")


class RequestIds:
    """Request ids: the client's ``X-Request-ID``, else a process prefix and a counter (unique across
    workers, cheaper than a uuid). One per app, shared by its request middleware and its connection
    fast path (`inferd.server.fast`), so ids never repeat within a process."""

    def __init__(self) -> None:
        self._prefix = f"{os.getpid():x}-{os.urandom(3).hex()}-"
        self._counter = itertools.count(1)

    def new(self) -> str:
        return f"{self._prefix}{next(self._counter):x}"


def log_access(method: str, path: str, status: int, started: float) -> None:
    """The access line of one request, ``started`` by `time.perf_counter`."""
    access_logger.info(
        "%s %s %d",
        method,
        path,
        status,
        extra={
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        },
    )


class RequestContext:
    """Gives every request an id (`RequestIds`), echoes it in the response, refuses bodies over
    ``max_body_size`` (by Content-Length up front, or while streaming), and logs one access line
    per request when enabled. With ``limit_of``, each request's limit is what it answers for the
    request (`inferd.server.limits.RouteLimits`: per route) instead.

    An error no handler took is logged here, once, with the request id, and answered 500. Starlette's
    server error middleware would answer it too, but then re-raises it for the ASGI server, and
    uvicorn logs the traceback again ("Exception in ASGI application")."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_size: int,
        access_log: bool,
        limit_of: Callable[[Scope], BodyLimit] | None = None,
        ids: RequestIds | None = None,
    ) -> None:
        self.app = app
        self.max_body_size = max_body_size
        self.limit = BodyLimit(max_body_size)
        self.limit_of = limit_of
        self.access_log = access_log
        self.ids = ids or RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid, length = None, None
        for key, value in scope["headers"]:
            if key == b"x-request-id":
                rid = value.decode("latin-1")
            elif key == b"content-length":
                length = value
        rid = rid or self.ids.new()
        token = request_id.set(rid)
        started = time.perf_counter()
        status, started_response = 500, False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                status, started_response = message["status"], True
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            limit = self.limit if self.limit_of is None else self.limit_of(scope)
            declared = int(length) if length is not None and length.isdigit() else None
            if declared is not None and declared > limit.size:
                await error_response(_too_large(limit))(scope, receive, send_with_id)
            elif declared is not None:  # the server reads no more than Content-Length says
                await self.app(scope, receive, send_with_id)
            else:
                await self.app(scope, _limited(receive, limit), send_with_id)
        except Exception as exc:
            log_unexpected(scope["method"], scope["path"], exc)
            if not started_response:  # else the answer is cut short: uvicorn closes the connection
                await error_response(exc)(scope, receive, send_with_id)
        finally:
            if self.access_log:
                log_access(scope["method"], scope["path"], status, started)
            request_id.reset(token)


def _limited(receive: Receive, limit: BodyLimit) -> Receive:
    received = 0

    async def limited_receive() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit.size:
                raise _too_large(limit)
        return message

    return limited_receive


def _too_large(limit: BodyLimit) -> PayloadTooLarge:
    setting = f" ({limit.setting})" if limit.setting else ""
    return PayloadTooLarge(f"request body is larger than the limit of {limit.size} bytes{setting}")
