"""The graph on Seldon's external API, as the executor serves it: ``/api/v1.0/predictions`` and
``/api/v1.0/feedback`` (and v0.1), plus the microservice names ``/predict`` and ``/send-feedback`` so
a graph server can itself be a node of another graph; ``/health/ping``, ``/ready``, ``/live`` and
``/api/v1.0/metadata``. Requests take Seldon's forms (JSON body, ``json`` form field or query
parameter, multipart) and errors come in Seldon's body, naming the node that failed."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from inferd.core import metrics as core_metrics
from inferd.core.dataplane import DataPlane
from inferd.dialects.graph.metadata import graph_metadata
from inferd.dialects.graph.model import served_graph
from inferd.protocols import asgi
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon.rest import (
    BOTH,
    GET,
    JSON_HEADERS,
    POST,
    PROTOCOL,
    dumps,
    error_response,
    json_response,
    method_not_allowed,
    not_found,
    only,
    ping,
    preflight,
    read_message,
    read_message_asgi,
)

PUID_HEADER = "Seldon-Puid"
PUID_HEADER_KEY = PUID_HEADER.lower().encode()
Handler = Callable[[Request], Awaitable[Response]]


def with_puid(message: Any, header: str | None) -> tuple[Any, str | None]:
    """The message with ``meta.puid`` set, from the message, the ``Seldon-Puid`` header or a new id
    (the executor's request id, which every node sees and echoes)."""
    if not isinstance(message, dict):
        return message, header
    meta = message.get("meta")
    puid = meta.get("puid") if isinstance(meta, dict) else None
    if puid:
        return message, str(puid)
    puid = header or os.urandom(16).hex()
    meta = meta if isinstance(meta, dict) else {}
    return {**message, "meta": {**meta, "puid": puid}}, puid


class Predictions:
    """The graph's predictions, a bare ASGI app (see `inferd.protocols.asgi`): the graph is the hot
    route, and its answer is a few node calls, so a `Request` and a `Response` would be a good part of
    it. Preflights and other methods are answered as every Seldon route answers them."""

    def __init__(self, dataplane: DataPlane, name: str, limits: UploadLimits, methods: tuple[str, ...]):
        self.dataplane, self.name, self.limits, self.methods = dataplane, name, limits, methods
        self.counted = core_metrics.series(name, PROTOCOL)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in self.methods or scope["method"] == "OPTIONS":
            request = Request(scope, receive)
            response = preflight(request) if request.method == "OPTIONS" else method_not_allowed(request)
            await response(scope, receive, send)
            return
        started, ok = self.counted.begin(), False
        try:
            message = await read_message_asgi(scope, receive, self.limits)
            message, puid = with_puid(message, asgi.header(scope, PUID_HEADER_KEY))
            graph = served_graph(self.dataplane, self.name)
            answer = await self.dataplane.run(self.name, lambda: graph.answer(message))
            ok = True
        except Exception as exc:
            await error_response(exc)(scope, receive, send)
            return
        finally:
            self.counted.end(started, ok)
        headers = [*JSON_HEADERS, (PUID_HEADER_KEY, puid.encode("latin-1"))] if puid else JSON_HEADERS
        await asgi.send_response(send, 200, dumps(answer), headers)


def routes(dataplane: DataPlane, name: str, limits: UploadLimits) -> list[BaseRoute]:
    counted = core_metrics.series(name, PROTOCOL)
    graph = functools.partial(served_graph, dataplane, name)

    async def feedback(request: Request) -> Response:
        started, ok = counted.begin(), False
        try:
            message = await read_message(request, limits)
            answer = await dataplane.run(name, lambda: graph().feedback(message))
            ok = True
            return json_response(answer)
        except Exception as exc:
            return error_response(exc)
        finally:
            counted.end(started, ok)

    async def ready(request: Request) -> Response:
        up = dataplane.model_ready(name)
        return Response("ready" if up else "not ready", 200 if up else 503, media_type="text/plain")

    async def live(request: Request) -> Response:
        return Response("live", media_type="text/plain")

    async def metadata(request: Request) -> Response:
        try:
            return json_response(await graph_metadata(graph()))
        except Exception as exc:
            return error_response(exc)

    found: list[BaseRoute] = [
        Route(path, Predictions(dataplane, name, limits, methods), methods=ANY_METHOD)
        for paths, methods in (
            (("/api/v1.0/predictions", "/api/v0.1/predictions"), POST),
            (("/predict",), BOTH),
        )
        for path in paths
    ]
    table: list[tuple[tuple[str, ...], tuple[str, ...], Handler]] = [
        (("/api/v1.0/feedback", "/api/v0.1/feedback"), POST, feedback),
        (("/send-feedback",), BOTH, feedback),
        (("/health/ping",), GET, ping),
        (("/ready",), GET, ready),
        (("/live",), GET, live),
        (("/api/v1.0/metadata", "/metadata"), GET, metadata),
    ]
    found += [
        Route(path, only(methods, handler), methods=ANY_METHOD)
        for paths, methods, handler in table
        for path in paths
    ]
    found.append(FallbackRoute("/{path:path}", not_found, methods=ANY_METHOD))
    return found
