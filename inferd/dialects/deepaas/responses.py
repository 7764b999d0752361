"""DEEPaaS's answers: text/plain ``"<code>: <Reason>"`` errors, JSON with a charset, and raw
non-JSON predictions with the content type the client accepted.

Each is built as an `Answer` (bytes and header tuples), which the predict route sends as it is (it is
a bare endpoint, `inferd.dialects.deepaas.predict`); the other routes take it as a Starlette
`Response` (`response`). Headers are those Starlette's `Response` set for the same answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import orjson
from starlette.responses import Response

from inferd.protocols.asgi import Answer
from inferd.protocols.status import scrubbed

JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
INTERNAL_ERROR_BODY = b"500 Internal Server Error\n\nServer got itself in trouble"
SCHEMA_FAILED = "ERROR validating model response, check server logs."
SCHEMA_CRASHED = "Unknown ERROR validating response, check server logs."
#: Header tuples built once: every JSON or text answer shares them.
JSON_HEADERS = ((b"content-type", JSON_TYPE.encode()),)
TEXT_HEADERS = ((b"content-type", TEXT_TYPE.encode()),)
INTERNAL_ERROR = Answer(500, INTERNAL_ERROR_BODY, ((b"connection", b"close"), *TEXT_HEADERS))


def response(answer: Answer) -> Response:
    """``answer`` as a Starlette `Response`, for the routes that are function endpoints."""
    found = Response(answer.body, answer.status)  # no media type: only its Content-Length header
    found.raw_headers = [*answer.headers, *found.raw_headers]
    return found


def json_answer(content: Any, status: int = 200) -> Answer:
    """``content`` as JSON (numpy values too); a `TypeError` when it is not JSON."""
    return Answer(status, orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), JSON_HEADERS)


def text_answer(status: int, reason: str | None = None, headers: Mapping[str, str] | None = None) -> Answer:
    """``"<code>: <Reason>"`` as aiohttp wrote it for its HTTP exceptions."""
    body = f"{status}: {reason or HTTPStatus(status).phrase}".encode()
    return Answer(status, body, (*_header_tuples(headers), *TEXT_HEADERS) if headers else TEXT_HEADERS)


def method_not_allowed_answer(allowed: tuple[str, ...]) -> Answer:
    return text_answer(405, headers={"Allow": ",".join(allowed)})


def raw_answer(output: Any, content_type: str) -> Answer | None:
    """A non-JSON prediction: bytes, text, or an open binary file (sent as an attachment); None for
    anything else (a server error, as upstream)."""
    if isinstance(output, (bytes, bytearray)):
        return Answer(200, bytes(output), (_content_type(content_type),))
    if isinstance(output, str):
        return Answer(200, output.encode(), (_content_type(content_type),))
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
        return Answer(
            200,
            content,
            ((b"content-disposition", disposition.encode("latin-1")), _content_type(content_type)),
        )
    return None


def http_exception_answer(exc: BaseException) -> Answer | None:
    """A web framework's HTTP exception raised by model code (aiohttp's ``HTTPException``, say),
    answered with its own status and reason; None for any other exception."""
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int) and 400 <= status <= 599 and hasattr(exc, "reason"):
        return text_answer(status, str(exc.reason) if status < 500 else scrubbed(str(exc.reason)))
    return None


def json(content: Any, status: int = 200) -> Response:
    return response(json_answer(content, status))


def text(status: int, reason: str | None = None, headers: Mapping[str, str] | None = None) -> Response:
    return response(text_answer(status, reason, headers))


def internal_error() -> Response:
    return response(INTERNAL_ERROR)


def method_not_allowed(allowed: tuple[str, ...]) -> Response:
    return response(method_not_allowed_answer(allowed))


def _content_type(media_type: str) -> tuple[bytes, bytes]:
    """The Content-Type header of ``media_type``, with the charset Starlette adds to ``text/`` types."""
    if media_type.startswith("text/") and "charset=" not in media_type.lower():
        media_type += "; charset=utf-8"
    return (b"content-type", media_type.encode("latin-1"))


def _header_tuples(headers: Mapping[str, str] | None) -> tuple[tuple[bytes, bytes], ...]:
    """Headers as ASGI sends them: lower-case names, latin-1 bytes (as Starlette encodes them)."""
    return tuple(
        (key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in (headers or {}).items()
    )
