"""Seldon's microservice REST API (spec §2-§3) for one component: every route, with the request forms,
CORS and error bodies of `inferd.protocols.seldon.rest`, and seldon-core's metrics server. User methods
run on the event loop, or in a thread with ``predict_in_thread``."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.core import metrics as core_metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelNotReady
from inferd.dialects.seldon import metrics, openapi
from inferd.dialects.seldon.component import SeldonModel, environment_flag, http_status
from inferd.protocols import prometheus
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon.rest import (
    BOTH,
    CORS,
    POST,
    PROTOCOL,
    dumps,
    error_response,
    json_response,
    not_found,
    only,
    only_get,
    ping,
    read_message,
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
