"""The Cortex room's routes, put together: each API's (a 0.8-0.10 handler's from `rest`, a predictor
or handler class's from `rest_classes`), ``/healthz`` and the catch-all Cortex answered unknown paths
with."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from inferd.core.dataplane import DataPlane
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.rest import UNKNOWN_PATH, Healthz, api_routes
from inferd.dialects.cortex.rest_classes import class_routes
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute


def all_routes(dataplane: DataPlane, apis: list[ApiConfig]) -> list[BaseRoute]:
    """Every API's routes, ``/healthz``, and the fallback for unknown paths (the app lists these last,
    so a path that exists elsewhere with other methods keeps its 405). A predictor class (0.12+) has
    the routes of `rest_classes`."""

    def of(api: ApiConfig, path: str) -> list[BaseRoute]:
        return (class_routes if api.format == "class" else api_routes)(dataplane, api, path)

    found = [route for api in apis for route in of(api, api.endpoint)]
    if len(apis) == 1 and apis[0].endpoint != "/predict":
        found += of(apis[0], "/predict")
    return [
        *found,
        Route("/healthz", Healthz(dataplane), methods=["GET"]),
        FallbackRoute("/{path:path}", UNKNOWN_PATH, methods=ANY_METHOD),
    ]
