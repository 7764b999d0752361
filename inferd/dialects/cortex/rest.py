"""The Cortex wire protocol: ``POST <endpoint>``, ``GET <endpoint>/signature``, ``/predict`` for a single
API, and ``GET /healthz``.

Responses are compact sorted-key JSON plus a newline; errors are the text bodies Cortex clients parse
(400 ``malformed json``, 406 ``prediction failed: ...``, and the original's 500 ``{"error": ...}`` for
unknown paths and wrong methods). Every response carries Cortex 0.9.2's CORS headers.

Every route is a bare ASGI endpoint (`inferd.protocols.asgi.BareEndpoint`) answering with header tuples
built once: the API paths are fixed, so the server calls them straight from its middleware stack
(`inferd.server.routing.DirectRoutes`), and a prediction enters the data plane like any other protocol's.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

import orjson
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InferdError
from inferd.dialects.cortex.adapter import CortexModel
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.json_body import dumps
from inferd.dialects.cortex.tracker import track
from inferd.protocols import asgi
from inferd.protocols.fallback import ANY_METHOD
from inferd.protocols.status import scrubbed

logger = logging.getLogger("inferd.cortex")

PROTOCOL = "cortex"
CORS = ((b"access-control-allow-origin", b"*"), (b"access-control-allow-headers", b"*"))
JSON_HEADERS = (*CORS, (b"content-type", b"application/json"))
#: Flask's error bodies were HTML; Starlette added the charset to a text media type.
TEXT_HEADERS = (*CORS, (b"content-type", b"text/html; charset=utf-8"))
#: Flask's catch-all error handler in Cortex answered routing errors with 500 and werkzeug's text.
NOT_FOUND = (
    "404 Not Found: The requested URL was not found on the server. "
    "If you entered the URL manually please check your spelling and try again."
)
METHOD_NOT_ALLOWED = "405 Method Not Allowed: The method is not allowed for the requested URL."


class MalformedJSON(Exception):
    pass


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


def json_answer(value: Any, status: int = 200) -> asgi.Answer:
    return asgi.Answer(status, dumps(value), JSON_HEADERS)


def text_answer(text: str, status: int) -> asgi.Answer:
    return asgi.Answer(status, text.encode(), TEXT_HEADERS)


MALFORMED = text_answer("malformed json", 400)


def _debug(scope: Scope) -> bool:
    """The ``debug=true`` query flag (any case; the last ``debug`` wins, as in Starlette's query params)."""
    query: bytes = scope["query_string"]
    flags = dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True))
    return flags.get("debug", "").lower() == "true"


class Predict(asgi.BareEndpoint):
    """``POST <endpoint>``: the sample through the API's handlers and model. A failure of the API's code
    is Cortex's 406 and counts as an error; a malformed body is 400 and is not a call of the model."""

    def __init__(self, dataplane: DataPlane, api: ApiConfig) -> None:
        self.dataplane, self.name, self.tracker = dataplane, api.name, api.tracker
        metrics.series(api.name, PROTOCOL)  # an API's request counts are on /metrics, at 0, from the start

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        try:
            sample = parse_sample(await asgi.read_body(receive), asgi.header(scope, b"content-type"))
        except MalformedJSON:
            return MALFORMED
        debug = b"debug" in scope["query_string"] and _debug(scope)
        with self.dataplane.call(self.name, PROTOCOL, CortexModel) as call:
            model = call.model
            try:
                result = await call.run(lambda: model.respond_async(sample, debug))
                body = dumps(result)
            except InferdError:
                raise
            except Exception as exc:
                logger.exception("api %s: prediction failed", self.name)
                call.ok = False
                return text_answer(f"prediction failed: {scrubbed(str(exc))}", 406)
        if self.tracker is not None:
            track(self.name, self.tracker, result)
        return asgi.Answer(200, body, JSON_HEADERS)


class Signature(asgi.BareEndpoint):
    """``GET <endpoint>/signature``: the model's inputs, or 404 for an API that has none."""

    def __init__(self, dataplane: DataPlane, api: ApiConfig) -> None:
        self.dataplane, self.name = dataplane, api.name

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        model = self.dataplane.registry.get(self.name)
        assert isinstance(model, CortexModel)
        body = model.signature()
        if body is None:
            return text_answer(f"api {self.name} has no signature", 404)
        return json_answer(body)


class Healthz(asgi.BareEndpoint):
    """``GET /healthz``: ``{"ok": true}`` once every API is ready, else 503."""

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        ready = self.dataplane.ready()
        return json_answer({"ok": ready}, 200 if ready else 503)


class Fixed(asgi.BareEndpoint):
    """An answer that never changes: the CORS preflight's and the routing errors'."""

    def __init__(self, fixed: asgi.Answer) -> None:
        self.fixed = fixed

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        return self.fixed


PREFLIGHT = Fixed(asgi.Answer(200, b"", CORS))
WRONG_METHOD = Fixed(json_answer({"error": METHOD_NOT_ALLOWED}, 500))
UNKNOWN_PATH = Fixed(json_answer({"error": NOT_FOUND}, 500))


def api_routes(dataplane: DataPlane, api: ApiConfig, path: str) -> list[BaseRoute]:
    signature = f"{path.rstrip('/')}/signature"
    return [
        Route(path, Predict(dataplane, api), methods=["POST"]),
        Route(path, PREFLIGHT, methods=["OPTIONS"]),
        Route(signature, Signature(dataplane, api), methods=["GET"]),
        Route(path, WRONG_METHOD, methods=ANY_METHOD),
        Route(signature, WRONG_METHOD, methods=ANY_METHOD),
    ]
