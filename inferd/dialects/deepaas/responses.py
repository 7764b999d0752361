"""DEEPaaS's answers: text/plain ``"<code>: <Reason>"`` errors, JSON with a charset, and raw
non-JSON predictions with the content type the client accepted."""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Any

import orjson
from starlette.responses import Response

from inferd.protocols.status import scrubbed

JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
INTERNAL_ERROR_BODY = b"500 Internal Server Error\n\nServer got itself in trouble"
SCHEMA_FAILED = "ERROR validating model response, check server logs."
SCHEMA_CRASHED = "Unknown ERROR validating response, check server logs."


def json(content: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), status, media_type=JSON_TYPE)


def text(status: int, reason: str | None = None, headers: dict[str, str] | None = None) -> Response:
    """``"<code>: <Reason>"`` as aiohttp wrote it for its HTTP exceptions."""
    body = f"{status}: {reason or HTTPStatus(status).phrase}"
    return Response(body, status, headers=headers, media_type=TEXT_TYPE)


def internal_error() -> Response:
    return Response(INTERNAL_ERROR_BODY, 500, headers={"Connection": "close"}, media_type=TEXT_TYPE)


def method_not_allowed(allowed: tuple[str, ...]) -> Response:
    return text(405, headers={"Allow": ",".join(allowed)})


def raw(output: Any, content_type: str) -> Response | None:
    """A non-JSON prediction: bytes, text, or an open binary file (sent as an attachment); None for
    anything else (a server error, as upstream)."""
    if isinstance(output, (bytes, bytearray)):
        return Response(bytes(output), media_type=content_type)
    if isinstance(output, str):
        return Response(output.encode(), media_type=content_type)
    read, name = getattr(output, "read", None), getattr(output, "name", None)
    if callable(read) and isinstance(name, str):
        try:
            content = read()
        finally:
            close = getattr(output, "close", None)
            if callable(close):
                close()
        if isinstance(content, str):
            content = content.encode()
        disposition = f'attachment; filename="{os.path.basename(name)}"'
        return Response(content, media_type=content_type, headers={"Content-Disposition": disposition})
    return None


def http_exception(exc: BaseException) -> Response | None:
    """A web framework's HTTP exception raised by model code (aiohttp's ``HTTPException``, say),
    answered with its own status and reason; None for any other exception."""
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int) and 400 <= status <= 599 and hasattr(exc, "reason"):
        return text(status, str(exc.reason) if status < 500 else scrubbed(str(exc.reason)))
    return None
