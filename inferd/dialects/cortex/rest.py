"""The Cortex wire protocol: ``POST <endpoint>``, ``GET <endpoint>/signature``, ``/predict`` for a single
API, and ``GET /healthz``.

Responses are compact sorted-key JSON plus a newline; errors are the text bodies Cortex clients parse
(400 ``malformed json``, 406 ``prediction failed: ...``, and the original's 500 ``{"error": ...}`` for
unknown paths and wrong methods). Every response carries Cortex 0.9.2's CORS headers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InferdError
from inferd.dialects.cortex.adapter import CortexModel
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.tracker import track
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.status import scrubbed

logger = logging.getLogger("inferd.cortex")

CORS = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "*"}
#: Without OPT_SERIALIZE_NUMPY: numpy values go through ``tolist``/``item`` as in Cortex, so a float32
#: is written as the float64 it widens to (0.8999999761581421, not 0.9).
_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
#: Flask's catch-all error handler in Cortex answered routing errors with 500 and werkzeug's text.
NOT_FOUND = (
    "404 Not Found: The requested URL was not found on the server. "
    "If you entered the URL manually please check your spelling and try again."
)
METHOD_NOT_ALLOWED = "405 Method Not Allowed: The method is not allowed for the requested URL."
Endpoint = Callable[[Request], Awaitable[Response]]


class MalformedJSON(Exception):
    pass


def dumps(value: Any) -> bytes:
    """Cortex's JSON: sorted keys, numpy arrays and scalars as plain JSON, a trailing newline."""
    return orjson.dumps(value, default=_plain, option=_JSON_OPTIONS)


def _plain(value: Any) -> Any:
    """What orjson does not write itself: numpy arrays and scalars, sets and tuples."""
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return getattr(value, method)()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def parse_sample(body: bytes, content_type: str | None) -> Any:
    """The JSON body, or None when the content type is not JSON (Flask's ``get_json()``)."""
    mimetype = (content_type or "").split(";", 1)[0].strip().lower()
    if mimetype != "application/json" and not (
        mimetype.startswith("application/") and mimetype.endswith("+json")
    ):
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise MalformedJSON from None


def json_response(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status, headers=CORS, media_type="application/json")


def text_response(text: str, status: int) -> Response:
    return Response(text, status, headers=CORS, media_type="text/html")


def _model(dataplane: DataPlane, name: str) -> CortexModel:
    model = dataplane.registry.get(name)
    assert isinstance(model, CortexModel)
    return model


def predict_endpoint(dataplane: DataPlane, api: ApiConfig) -> Endpoint:
    counted = metrics.series(api.name, "cortex")

    async def predict(request: Request) -> Response:
        try:
            sample = parse_sample(await request.body(), request.headers.get("content-type"))
        except MalformedJSON:
            return text_response("malformed json", 400)
        model = _model(dataplane, api.name)
        debug = b"debug" in request.scope["query_string"] and _debug(request)
        started, ok = counted.begin(), False
        try:
            result = await dataplane.run(api.name, lambda: model.respond_async(sample, debug))
            body = dumps(result)
            ok = True
        except InferdError:
            raise
        except Exception as exc:
            logger.exception("api %s: prediction failed", api.name)
            return text_response(f"prediction failed: {scrubbed(str(exc))}", 406)
        finally:
            counted.end(started, ok)
        if api.tracker is not None:
            track(api.name, api.tracker, result)
        return Response(body, headers=CORS, media_type="application/json")

    return predict


def _debug(request: Request) -> bool:
    return request.query_params.get("debug", "").lower() == "true"


def signature_endpoint(dataplane: DataPlane, api: ApiConfig) -> Endpoint:
    async def signature(request: Request) -> Response:
        body = _model(dataplane, api.name).signature()
        if body is None:
            return text_response(f"api {api.name} has no signature", 404)
        return json_response(body)

    return signature


def healthz_endpoint(dataplane: DataPlane) -> Endpoint:
    async def healthz(request: Request) -> Response:
        ready = dataplane.ready()
        return json_response({"ok": ready}, 200 if ready else 503)

    return healthz


async def preflight(request: Request) -> Response:
    return Response(status_code=200, headers=CORS)


async def method_not_allowed(request: Request) -> Response:
    return json_response({"error": METHOD_NOT_ALLOWED}, 500)


async def not_found(request: Request) -> Response:
    return json_response({"error": NOT_FOUND}, 500)


def api_routes(dataplane: DataPlane, api: ApiConfig, path: str) -> list[BaseRoute]:
    signature = f"{path.rstrip('/')}/signature"
    return [
        Route(path, predict_endpoint(dataplane, api), methods=["POST"]),
        Route(path, preflight, methods=["OPTIONS"]),
        Route(signature, signature_endpoint(dataplane, api), methods=["GET"]),
        Route(path, method_not_allowed, methods=ANY_METHOD),
        Route(signature, method_not_allowed, methods=ANY_METHOD),
    ]


def routes(dataplane: DataPlane, apis: list[ApiConfig]) -> list[BaseRoute]:
    """Every API's routes, ``/healthz``, and the fallback for unknown paths (the app lists these last,
    so a path that exists elsewhere with other methods keeps its 405)."""
    found = [route for api in apis for route in api_routes(dataplane, api, api.endpoint)]
    if len(apis) == 1 and apis[0].endpoint != "/predict":
        found += api_routes(dataplane, apis[0], "/predict")
    return [
        *found,
        Route("/healthz", healthz_endpoint(dataplane), methods=["GET"]),
        FallbackRoute("/{path:path}", not_found, methods=ANY_METHOD),
    ]
