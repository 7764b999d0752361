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
from starlette.types import Receive, Scope

from inferd.core.dataplane import DataPlane, ModelCall
from inferd.dialects.graph.metadata import graph_metadata
from inferd.dialects.graph.model import GraphModel, served_graph
from inferd.protocols import asgi
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon.rest import (
    BOTH,
    GET,
    JSON_HEADERS,
    POST,
    SeldonEndpoint,
    dumps,
    error_response,
    json_answer,
    json_response,
    not_found,
    only,
    ping,
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


class GraphCall(SeldonEndpoint[GraphModel]):
    """A route calling the graph served as ``name``."""

    def __init__(self, dataplane: DataPlane, name: str, limits: UploadLimits, methods: tuple[str, ...]):
        super().__init__(dataplane, name, GraphModel, methods, limits)


class Predictions(GraphCall):
    """The graph's predictions: the hot route, and its answer is a few node calls, so it is a bare
    endpoint (a `Request` and a `Response` would be a good part of it). The answer carries the
    request's puid in ``Seldon-Puid``."""

    async def reply(self, call: ModelCall[GraphModel], scope: Scope, receive: Receive) -> asgi.Answer:
        message = await self.message(scope, receive)
        message, puid = with_puid(message, asgi.header(scope, PUID_HEADER_KEY))
        graph = call.model
        answer = dumps(await call.run(lambda: graph.answer(message)))
        headers = (*JSON_HEADERS, (PUID_HEADER_KEY, puid.encode("latin-1"))) if puid else JSON_HEADERS
        return asgi.Answer(200, answer, headers)


class Feedback(GraphCall):
    """Feedback to the graph, which passes it to its nodes; counted as a call of the graph."""

    async def reply(self, call: ModelCall[GraphModel], scope: Scope, receive: Receive) -> asgi.Answer:
        message = await self.message(scope, receive)
        graph = call.model
        return json_answer(await call.run(lambda: graph.feedback(message)))


def routes(dataplane: DataPlane, name: str, limits: UploadLimits) -> list[BaseRoute]:
    graph = functools.partial(served_graph, dataplane, name)

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

    calls = (
        (("/api/v1.0/predictions", "/api/v0.1/predictions"), POST, Predictions),
        (("/predict",), BOTH, Predictions),
        (("/api/v1.0/feedback", "/api/v0.1/feedback"), POST, Feedback),
        (("/send-feedback",), BOTH, Feedback),
    )
    found: list[BaseRoute] = [
        Route(path, endpoint(dataplane, name, limits, methods), methods=ANY_METHOD)
        for paths, methods, endpoint in calls
        for path in paths
    ]
    table: list[tuple[tuple[str, ...], tuple[str, ...], Handler]] = [
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
