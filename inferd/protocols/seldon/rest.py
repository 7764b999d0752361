"""Seldon's microservice REST API as every Seldon server speaks it (spec §2-§3): the forms a message
comes in (JSON body, ``json`` form field or query parameter, multipart), Seldon's JSON (keys sorted,
CORS for every origin), preflights, and 404 and 405 and every error in Seldon's body; and
`SeldonEndpoint`, the bare endpoint of every route that calls a model with a message."""

from __future__ import annotations

import base64
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic

import orjson
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from inferd.core.dataplane import DataPlane, M, ModelCall
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
JSON_HEADERS = ((b"access-control-allow-origin", b"*"), (b"content-type", b"application/json"))
NOT_FOUND = (
    "404 Not Found: The requested URL was not found on the server. If you entered the URL manually "
    "please check your spelling and try again."
)


def dumps(content: Any) -> bytes:
    """Seldon's JSON: keys sorted, as Flask wrote them."""
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def json_response(content: Any, status: int = 200) -> Response:
    return Response(dumps(content), status, headers=CORS, media_type="application/json")


def json_answer(content: Any, status: int = 200) -> asgi.Answer:
    """`json_response` for a bare endpoint."""
    return asgi.Answer(status, dumps(content), JSON_HEADERS)


def error_answer(exc: BaseException) -> asgi.Answer:
    """What a Seldon route answers ``exc`` with: Seldon's error body, its status, and the headers the
    error asks for (``Retry-After`` ...)."""
    error = as_seldon_error(exc)
    extra = error_headers(exc)
    headers = (*JSON_HEADERS, *encoded(extra.items())) if extra else JSON_HEADERS
    return asgi.Answer(error.status, dumps(error.body()), headers)


def error_response(exc: BaseException) -> Response:
    """`error_answer` for a route answering with a `Response`."""
    return as_response(error_answer(exc))


def as_response(answer: asgi.Answer) -> Response:
    """``answer`` as a Starlette `Response` (its Content-Length added)."""
    response = Response(answer.body, answer.status)
    response.raw_headers += answer.headers
    return response


def encoded(headers: Iterable[tuple[str, str]]) -> tuple[tuple[bytes, bytes], ...]:
    """Text headers as a bare endpoint sends them: names lower-case, latin-1, as Starlette encodes them."""
    return tuple((key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in headers)


def is_json(content_type: str) -> bool:
    """Whether a body of ``content_type`` is JSON (``application/json`` or a ``+json`` type); on every
    request's path, so no generator."""
    return "application/json" in content_type or "+json" in content_type


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
    if body and is_json(content_type):
        return _loads(body)
    raise SeldonError("Can't find JSON in data")


async def read_message_asgi(scope: Scope, receive: Receive, limits: UploadLimits) -> Any:
    """`read_message` for a bare ASGI endpoint: the common case, a JSON body and no query string, read
    without building a `Request`; any other form through `read_message`."""
    content_type = asgi.header(scope, b"content-type") or ""
    if scope["query_string"] or "form" in content_type or not is_json(content_type):
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
        if refuses(methods, request.method):
            return refusal(request)
        return await handler(request)

    return answer


def refuses(methods: tuple[str, ...], method: str) -> bool:
    """Whether a route taking ``methods`` leaves a ``method`` request to `refusal`."""
    return method == "OPTIONS" or method not in methods


def refusal(request: Request) -> Response:
    """The answer to a method a route does not take: a CORS preflight for OPTIONS, else 405."""
    return preflight(request) if request.method == "OPTIONS" else method_not_allowed(request)


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


class SeldonEndpoint(asgi.BareEndpoint, Generic[M]):
    """A route calling model ``name`` (a ``kind``) with a message, as a bare endpoint: a request of one
    of ``methods`` enters the data plane (`DataPlane.call`, which counts and times it) and gets `reply`'s
    answer, counted as an error when its status is 400 or more; any error gets Seldon's error body
    (`failure`), and an unknown or unready model is refused before anything is counted. Preflights and
    other methods are answered as `only` answers them: they are rare, so they get a `Request`."""

    def __init__(
        self, dataplane: DataPlane, name: str, kind: type[M], methods: tuple[str, ...], limits: UploadLimits
    ) -> None:
        self.dataplane, self.name, self.kind, self.methods = dataplane, name, kind, methods
        #: The limits of a message sent as a form.
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if refuses(self.methods, scope["method"]):
            await refusal(Request(scope, receive))(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        try:
            call = self.dataplane.call(self.name, PROTOCOL, self.kind)
        except Exception as exc:
            return error_answer(exc)
        with call:
            try:
                answer = await self.reply(call, scope, receive)
            except Exception as exc:
                call.ok = False
                return self.failure(call.model, exc)
            call.ok = answer.status < 400
            return answer

    @abstractmethod
    async def reply(self, call: ModelCall[M], scope: Scope, receive: Receive) -> asgi.Answer:
        """Decode the request, call the model through ``call`` (`ModelCall.run`) and encode its answer."""

    async def message(self, scope: Scope, receive: Receive) -> Any:
        """The request's message, in whichever of Seldon's forms it came (`read_message_asgi`)."""
        return await read_message_asgi(scope, receive, self.limits)

    def failure(self, model: M, exc: Exception) -> asgi.Answer:
        """The answer to ``exc``, raised while ``model`` answered: Seldon's error body."""
        return error_answer(exc)
