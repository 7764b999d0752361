"""Seldon's microservice REST API as every Seldon server speaks it (spec §2-§3): the forms a message
comes in (JSON body, ``json`` form field or query parameter, multipart), Seldon's JSON (keys sorted,
CORS for every origin), preflights, and 404 and 405 and every error in Seldon's body."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.protocols import asgi
from inferd.protocols.forms import UploadLimits, read_form
from inferd.protocols.seldon.errors import INTERNAL_ERROR, SeldonError, as_seldon_error
from inferd.protocols.status import error_headers

PROTOCOL = "seldon"
BOTH = ("GET", "POST")
GET = ("GET", "HEAD")
POST = ("POST",)
CORS = {"Access-Control-Allow-Origin": "*"}
#: `json_response`'s headers, for bare ASGI endpoints (names lower-case).
JSON_HEADERS = [(b"access-control-allow-origin", b"*"), (b"content-type", b"application/json")]
NOT_FOUND = (
    "404 Not Found: The requested URL was not found on the server. If you entered the URL manually "
    "please check your spelling and try again."
)
JSON_TYPES = ("application/json", "+json")


def dumps(content: Any) -> bytes:
    """Seldon's JSON: keys sorted, as Flask wrote them."""
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def json_response(content: Any, status: int = 200) -> Response:
    return Response(dumps(content), status, headers=CORS, media_type="application/json")


def error_response(exc: BaseException) -> Response:
    error = as_seldon_error(exc)
    response = json_response(error.body(), error.status)
    response.headers.update(error_headers(exc))
    return response


async def read_message(request: Request, limits: UploadLimits) -> Any:
    """The request's message, from the first of: multipart parts, form field ``json``, query
    parameter ``json``, a JSON body (spec §3.1)."""
    content_type = request.headers.get("content-type", "")
    if "multipart/form-data" in content_type:
        return await _from_multipart(request, limits)
    if "application/x-www-form-urlencoded" in content_type:
        form = await _form(request, limits)
        if "json" in form:
            return _loads(str(form["json"]))
    if request.scope["query_string"] and "json" in request.query_params:
        return _loads(request.query_params["json"])
    body = await request.body()
    if body and any(kind in content_type for kind in JSON_TYPES):
        return _loads(body)
    raise SeldonError("Can't find JSON in data")


async def read_message_asgi(scope: Scope, receive: Receive, limits: UploadLimits) -> Any:
    """`read_message` for a bare ASGI endpoint: the common case, a JSON body and no query string, read
    without building a `Request`; any other form through `read_message`."""
    content_type = asgi.header(scope, b"content-type") or ""
    if scope["query_string"] or "form" in content_type or not any(k in content_type for k in JSON_TYPES):
        return await read_message(Request(scope, receive), limits)
    body = await asgi.read_body(receive)
    if not body:
        raise SeldonError("Can't find JSON in data")
    return _loads(body)


async def _form(request: Request, limits: UploadLimits) -> FormData:
    try:
        return await read_form(request, limits)
    except PayloadTooLarge:
        raise
    except InvalidInput as exc:
        raise SeldonError(f"Invalid form data: {exc.message}") from None


async def _from_multipart(request: Request, limits: UploadLimits) -> dict[str, Any]:
    """Text parts are JSON but ``strData``; a file ``binData`` is base64-encoded, other files text."""
    form = await _form(request, limits)
    message: dict[str, Any] = {}
    try:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                content = await value.read()
                message[key] = base64.b64encode(content).decode() if key == "binData" else content.decode()
            else:
                message[key] = value if key == "strData" else _loads(value)
    finally:
        await form.close()
    return message


def _loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SeldonError(f"Invalid JSON: {exc}") from None


async def ping(request: Request) -> Response:
    """``/health/ping``: the process answers, whatever its components do."""
    return Response("pong", headers=CORS, media_type="text/html")


async def not_found(request: Request) -> Response:
    return json_response(SeldonError(NOT_FOUND, 404, INTERNAL_ERROR).body(), 404)


def only(
    methods: tuple[str, ...], handler: Callable[[Request], Awaitable[Response]]
) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` for ``methods``; CORS preflights answered, other methods 405 in Seldon's body."""

    async def answer(request: Request) -> Response:
        if request.method == "OPTIONS":
            return preflight(request)
        if request.method not in methods:
            return method_not_allowed(request)
        return await handler(request)

    return answer


def only_get(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    return only(GET, handler)


def preflight(request: Request) -> Response:
    """CORS preflight, answered for every origin as Flask-CORS did."""
    headers = {
        **CORS,
        "Access-Control-Allow-Methods": "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT",
    }
    wanted = request.headers.get("access-control-request-headers")
    if wanted:
        headers["Access-Control-Allow-Headers"] = wanted
    return Response(status_code=200, headers=headers)


def method_not_allowed(request: Request) -> Response:
    info = "405 Method Not Allowed: The method is not allowed for the requested URL."
    return json_response(SeldonError(info, 405, INTERNAL_ERROR).body(), 405)
