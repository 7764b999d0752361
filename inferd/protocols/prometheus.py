"""The Prometheus exposition: this process's registry, or every worker's through the multiprocess dir.

Served at ``/metrics`` by the server, and at whatever path a dialect's platform scrapes (Seldon's
``PREDICTIVE_UNIT_METRICS_ENDPOINT``).
"""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PATH = "/metrics"


def _registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


async def endpoint(request: Request) -> Response:
    return Response(generate_latest(_registry()), media_type=CONTENT_TYPE_LATEST)


def routes() -> list[Route]:
    return [Route(PATH, endpoint, methods=["GET"])]
