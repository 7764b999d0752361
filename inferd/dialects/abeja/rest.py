"""ABEJA's HTTP surface: ``GET /health_check``, and every other path is the model endpoint.

Health and "not ready" bodies are the proxy's. The endpoint hands the request to
`AbejaModel.respond`, which keeps a slow handler from holding up other requests.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.dialects.abeja.responses import SERVICE_UNAVAILABLE, Answer
from inferd.dialects.abeja.service import AbejaModel, Call
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute

HEALTHY = Answer(200, b'{"status":"ok"}', "application/json")


def to_response(answer: Answer) -> Response:
    headers = {**dict(answer.headers), "content-type": answer.content_type}
    return Response(answer.body, answer.status, headers=headers)


def routes(dataplane: DataPlane, name: str) -> list[BaseRoute]:
    counted = metrics.series(name, "abeja")

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
        started = counted.begin()
        answer = await model.respond(call)
        counted.end(started, answer.status < 400)
        return to_response(answer)

    return [
        Route("/health_check", health_check, methods=["GET"]),
        Route("/", endpoint, methods=ANY_METHOD),  # where clients post: matched before the fallback
        FallbackRoute("/{path:path}", endpoint, methods=ANY_METHOD),
    ]
