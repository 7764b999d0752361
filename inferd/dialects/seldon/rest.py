"""Seldon's microservice REST API (spec §2-§3) for one component: every route, with the request forms,
CORS and error bodies of `inferd.protocols.seldon.rest`, and seldon-core's metrics server. User methods
run on the event loop, or in a thread with ``predict_in_thread``."""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope

from inferd.core.dataplane import DataPlane, ModelCall
from inferd.core.errors import ModelNotReady
from inferd.dialects.seldon import metrics, openapi
from inferd.dialects.seldon.component import SeldonModel, environment_flag
from inferd.dialects.seldon.replies import http_status
from inferd.protocols import asgi, prometheus
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon.rest import (
    BOTH,
    JSON_HEADERS,
    POST,
    SeldonEndpoint,
    dumps,
    encoded,
    error_response,
    json_answer,
    json_response,
    not_found,
    only_get,
    ping,
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


class Message(SeldonEndpoint[SeldonModel]):
    """A route answering a message with the component's Seldon ``method`` (``predict``, ``route`` ...).
    With ``PAYLOAD_PASSTHROUGH``, predict hands the user's ``predict_raw`` the body as it came."""

    def __init__(
        self, dataplane: DataPlane, name: str, limits: UploadLimits, method: str, methods: tuple[str, ...]
    ) -> None:
        super().__init__(dataplane, name, SeldonModel, methods, limits)
        self.method = method
        self.passthrough = method == "predict" and environment_flag("PAYLOAD_PASSTHROUGH", "false")

    async def reply(self, call: ModelCall[SeldonModel], scope: Scope, receive: Receive) -> asgi.Answer:
        unit, method = call.model, self.method
        if self.passthrough:
            body = await asgi.read_body(receive)
            result = await call.run(lambda: unit.call_user(unit.passthrough, body))
            return asgi.Answer(http_status(result), raw_body(result), JSON_HEADERS)
        message = await self.message(scope, receive)
        reply = await call.run(lambda: unit.answer(method, message))
        return json_answer(reply.body, reply.status)

    def failure(self, model: SeldonModel, exc: Exception) -> asgi.Answer:
        """The answer of the user's ``model_error_handler`` to ``exc``, if it has one that takes it."""
        handled = model.error_handlers.answer(exc) if model.error_handlers else None
        if handled is None:
            return super().failure(model, exc)
        return asgi.Answer(handled.status, handled.body, encoded(dict(handled.headers).items()))


def raw_body(result: object) -> bytes:
    """What ``predict_raw`` answered a passed-through body with, as the body to send: text and bytes
    as they are, anything else as Seldon's JSON."""
    if isinstance(result, bytes):
        return result
    return result.encode() if isinstance(result, str) else dumps(result)


def routes(dataplane: DataPlane, name: str, limits: UploadLimits) -> list[BaseRoute]:
    def component() -> SeldonModel:
        if not dataplane.model_ready(name):
            raise ModelNotReady(f"model '{name}' is not ready")
        model = dataplane.registry.get(name)
        assert isinstance(model, SeldonModel)
        return model

    async def health_status(request: Request) -> Response:
        try:
            model = component()
            reply = await model.call_user(model.health_status)
            return json_response(reply.body, reply.status)
        except Exception as exc:
            return error_response(exc)

    async def model_metadata(request: Request) -> Response:
        try:
            return json_response(component().metadata_answer())
        except Exception as exc:
            return error_response(exc)

    async def seldon_json(request: Request) -> Response:
        return json_response(openapi.DOCUMENT)

    table: list[BaseRoute] = [
        Route(path, Message(dataplane, name, limits, method, methods), methods=ANY_METHOD)
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
