"""Seldon's microservice REST API (spec §2-§3): the request forms, every route, CORS, and errors in
Seldon's body. User methods run on the event loop, or in a thread with ``predict_in_thread``."""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope

from inferd.core import metrics as core_metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InvalidInput, ModelNotReady, PayloadTooLarge
from inferd.dialects.seldon import metrics, openapi
from inferd.dialects.seldon.component import SeldonModel, environment_flag, http_status
from inferd.dialects.seldon.errors import INTERNAL_ERROR, SeldonError, as_seldon_error
from inferd.protocols import asgi, prometheus
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.forms import UploadLimits, read_form
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
#: (paths, methods, Seldon method) of every route that takes a message.
MESSAGE_ROUTES: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (("/predict",), BOTH, "predict"),
    (("/api/v1.0/predictions", "/api/v0.1/predictions"), POST, "predict"),
    (("/send-feedback",), BOTH, "send_feedback"),
    (("/api/v1.0/feedback", "/api/v0.1/feedback"), POST, "send_feedback"),
    (("/transform-input",), BOTH, "transform_input"),
    (("/transform-output",), BOTH, "transform_output"),
    (("/route",), BOTH, "route"),
    (("/aggregate",), BOTH, "aggregate"),
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


def routes(dataplane: DataPlane, name: str, limits: UploadLimits) -> list[BaseRoute]:
    counted = core_metrics.series(name, PROTOCOL)
    passthrough = environment_flag("PAYLOAD_PASSTHROUGH", "false")

    def component() -> SeldonModel:
        if not dataplane.model_ready(name):
            raise ModelNotReady(f"model '{name}' is not ready")
        model = dataplane.registry.get(name)
        assert isinstance(model, SeldonModel)
        return model

    def endpoint(method: str, allowed: tuple[str, ...]) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            started, ok, model = counted.begin(), False, None
            try:
                model = unit = component()
                if passthrough and method == "predict":
                    body = await request.body()
                    result = await dataplane.run(name, lambda: unit.call_user(unit.passthrough, body))
                    content = result if isinstance(result, (bytes, str)) else dumps(result)
                    status = http_status(result)
                    ok = status < 400
                    return Response(content, status, headers=CORS, media_type="application/json")
                message = await read_message(request, limits)
                reply = await dataplane.run(name, lambda: unit.answer(method, message))
                ok = reply.status < 400
                return json_response(reply.body, reply.status)
            except Exception as exc:
                handled = model.error_handlers.answer(exc) if model and model.error_handlers else None
                if handled is not None:
                    return Response(handled.body, handled.status, headers=dict(handled.headers))
                return error_response(exc)
            finally:
                counted.end(started, ok)

        return only(allowed, answer)

    async def health_status(request: Request) -> Response:
        try:
            model = component()
            reply = await model.call_user(model.health_status)
            return json_response(reply.body, reply.status)
        except Exception as exc:
            return error_response(exc)

    async def ping(request: Request) -> Response:
        return Response("pong", headers=CORS, media_type="text/html")

    async def model_metadata(request: Request) -> Response:
        try:
            return json_response(component().metadata_answer())
        except Exception as exc:
            return error_response(exc)

    async def seldon_json(request: Request) -> Response:
        return json_response(openapi.DOCUMENT)

    table: list[BaseRoute] = [
        Route(path, endpoint(method, methods), methods=ANY_METHOD)
        for paths, methods, method in MESSAGE_ROUTES
        for path in paths
    ]
    plain = [
        (("/health/ping",), ping),
        (("/health/status", "/api/v1.0/health/status"), health_status),
        (("/metadata", "/api/v1.0/metadata"), model_metadata),
        (("/seldon.json",), seldon_json),
    ]
    table += [
        Route(path, only_get(handler), methods=ANY_METHOD) for paths, handler in plain for path in paths
    ]
    if metrics_path() != prometheus.PATH:  # /metrics stays inferd's, with every series
        table += metrics_routes()
    table.append(FallbackRoute("/{path:path}", not_found, methods=ANY_METHOD))
    return table


def metrics_path() -> str:
    return os.environ.get("PREDICTIVE_UNIT_METRICS_ENDPOINT", prometheus.PATH)


def metrics_routes() -> list[BaseRoute]:
    """seldon-core's metrics server: ``PREDICTIVE_UNIT_METRICS_ENDPOINT`` (``/metrics`` unset)
    serving the Seldon series alone."""
    return [Route(metrics_path(), seldon_metrics, methods=["GET"])]


async def seldon_metrics(request: Request) -> Response:
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


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
