"""The ``/metrics`` route: this process's registry, or every worker's through the multiprocess dir."""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def _registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


async def metrics(request: Request) -> Response:
    return Response(generate_latest(_registry()), media_type=CONTENT_TYPE_LATEST)


def routes() -> list[Route]:
    return [Route("/metrics", metrics, methods=["GET"])]
