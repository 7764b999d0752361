"""ABEJA's HTTP surface: ``GET /health_check``, and every other path is the model endpoint.

Health and "not ready" bodies are the proxy's. The endpoint hands the request to `AbejaModel.answer`
in a thread, so a slow handler never holds up other requests.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.dialects.abeja.responses import SERVICE_UNAVAILABLE, Answer
from inferd.dialects.abeja.service import AbejaModel, Call
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute

#: Handlers running at once (anyio's default too); more requests wait in the executor's queue.
HANDLER_THREADS = 40
HEALTHY = Answer(200, b'{"status":"ok"}', "application/json")


def to_response(answer: Answer) -> Response:
    headers = {**dict(answer.headers), "content-type": answer.content_type}
    return Response(answer.body, answer.status, headers=headers)


def routes(dataplane: DataPlane, name: str) -> list[BaseRoute]:
    counted = metrics.series(name, "abeja")
    handlers = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix="abeja-handler")

    async def health_check(request: Request) -> Response:
        return to_response(HEALTHY if dataplane.ready() else SERVICE_UNAVAILABLE)

    async def endpoint(request: Request) -> Response:
        if not dataplane.model_ready(name):
            return to_response(SERVICE_UNAVAILABLE)
        model = dataplane.registry.get(name)
        assert isinstance(model, AbejaModel)
        call = Call(
            request.method,
            request.headers.get("content-type"),
            request.headers.items(),
            await request.body(),
            request.scope["query_string"],
        )
        started, answer = counted.begin(), None
        loop = asyncio.get_running_loop()
        try:
            answer = await dataplane.run(name, lambda: loop.run_in_executor(handlers, model.answer, call))
            return to_response(answer)
        finally:
            counted.end(started, answer is not None and answer.status < 400)

    return [
        Route("/health_check", health_check, methods=["GET"]),
        Route("/", endpoint, methods=ANY_METHOD),  # where clients post: matched before the fallback
        FallbackRoute("/{path:path}", endpoint, methods=ANY_METHOD),
    ]
