"""The control API's routes the workflows need beyond the first slice's (a family of
`inferd.platform.api.app.FAMILIES`):

- ``GET /platform/v1/services/{s}/metrics``: what the service's own ``/metrics`` says, summed over
  its models and protocols: requests, errors, mean latency and p50/p99 estimated from the histogram's
  buckets (``inferd get``);
- ``GET /platform/v1/services/{s}/logs/follow?lines=N``: the last N lines of its log, then every new
  one as it is written, as ``text/plain``, until the service is stopped or fails (``inferd logs``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from inferd.core.errors import InvalidInput, NotFound
from inferd.platform.api.routes import PREFIX
from inferd.platform.manager import LIVE_STATES, Platform
from inferd.platform.services.logs import ServiceLog
from inferd.platform.settings import PlatformSettings
from inferd.protocols.json import JSONResponse

REQUESTS = "inferd_requests"
LATENCY = "inferd_request_duration_seconds"
FOLLOW_POLL_SECONDS = 0.2
METRICS_TIMEOUT = 5.0


def summarize(text: str) -> dict[str, Any]:
    """Requests, errors and latency (ms: mean, p50, p99) of a Prometheus exposition of inferd's."""
    from prometheus_client.parser import text_string_to_metric_families

    requests = errors = 0.0
    count = total = 0.0
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.name == REQUESTS and sample.name == REQUESTS + "_total":
                requests += sample.value
                errors += sample.value if sample.labels.get("outcome") == "error" else 0.0
            elif family.name == LATENCY and sample.name == LATENCY + "_count":
                count += sample.value
            elif family.name == LATENCY and sample.name == LATENCY + "_sum":
                total += sample.value
            elif family.name == LATENCY and sample.name == LATENCY + "_bucket":
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    latency = {
        "mean": round(1000 * total / count, 3) if count else None,
        "p50": _quantile(buckets, 0.5),
        "p99": _quantile(buckets, 0.99),
    }
    return {"requests": int(requests), "errors": int(errors), "latency_ms": latency}


def _quantile(buckets: dict[float, float], q: float) -> float | None:
    """The ``q`` quantile in ms, linear within the bucket it falls in (as PromQL's
    ``histogram_quantile``); None without observations."""
    bounds = sorted(buckets)
    if not bounds or not buckets[bounds[-1]]:
        return None
    rank, lower, below = q * buckets[bounds[-1]], 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if math.isinf(bound):
                return round(1000 * lower, 3)
            share = (rank - below) / (buckets[bound] - below) if buckets[bound] > below else 1.0
            return round(1000 * (lower + (bound - lower) * share), 3)
        lower, below = bound, buckets[bound]
    return None


class WorkflowAPI:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    async def metrics(self, request: Request) -> Response:
        """What the ``/metrics`` of every replica of the service say, together."""
        import httpx

        service = self.platform.store.service(request.path_params["service"])
        if service.state not in LIVE_STATES or service.port is None:
            return JSONResponse({"service": service.id, "state": service.state.value, "metrics": None})
        headers = {"authorization": f"Bearer {self.platform.token_of(service.id)}"}
        async with httpx.AsyncClient(timeout=METRICS_TIMEOUT, headers=headers) as http:
            addresses = self.platform.routing.addresses(service)
            texts = await asyncio.gather(*(_exposition(http, address) for address in addresses))
        try:
            found = summarize("\n".join(texts)) if any(texts) else None
        except ValueError:
            found = None
        return JSONResponse({"service": service.id, "state": service.state.value, "metrics": found})

    async def follow(self, request: Request) -> Response:
        service = self.platform.store.service(request.path_params["service"])
        try:
            lines = min(10_000, max(0, int(request.query_params.get("lines", "20"))))
        except ValueError:
            raise InvalidInput("lines must be a whole number") from None
        log = ServiceLog(self.platform.log_dir / f"{service.id}.log")
        reader = log.reader()  # before the tail: no line falls between the two
        return StreamingResponse(
            self._lines(service.id, log.tail(lines) if lines else [], reader),
            media_type="text/plain; charset=utf-8",
        )

    async def _lines(self, service_id: str, first: Iterable[str], reader: Any) -> AsyncIterator[str]:
        for line in first:
            yield line + "\n"
        while True:
            try:
                live = self.platform.store.service(service_id).state in LIVE_STATES
            except NotFound:  # deleted meanwhile
                live = False
            for line in reader.read_lines():
                yield line + "\n"
            if not live:
                return
            await asyncio.sleep(FOLLOW_POLL_SECONDS)


async def _exposition(http: Any, address: str) -> str:
    """A server's ``/metrics`` text; empty when it did not answer with one."""
    import httpx

    try:
        answer = await http.get(f"http://{address}/metrics")
    except httpx.HTTPError:
        return ""
    return answer.text if answer.status_code == 200 else ""


def workflow_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    api = WorkflowAPI(platform)
    return [
        Route(PREFIX + "/services/{service}/metrics", api.metrics, methods=["GET"]),
        Route(PREFIX + "/services/{service}/logs/follow", api.follow, methods=["GET"]),
    ]
