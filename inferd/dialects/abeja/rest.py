"""ABEJA's HTTP surface: ``GET /health_check``, and every other path is the model endpoint.

Health and "not ready" bodies are the proxy's. The endpoint hands the request to
`AbejaModel.respond`, which keeps a slow handler from holding up other requests.
"""

from __future__ import annotations

import functools

from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.dialects.abeja.responses import SERVICE_UNAVAILABLE, Answer
from inferd.dialects.abeja.service import AbejaModel, Call
from inferd.protocols import asgi
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute

HEALTHY = Answer(200, b'{"status":"ok"}', "application/json")


async def send_answer(send: Send, answer: Answer) -> None:
    await asgi.send_response(
        send, answer.status, answer.body, _raw_headers(answer.headers, answer.content_type)
    )


@functools.lru_cache(maxsize=256)
def _raw_headers(headers: tuple[tuple[str, str], ...], content_type: str) -> tuple[tuple[bytes, bytes], ...]:
    """The answer's headers for ASGI, its own Content-Type in place of any the handler's metadata
    names; made once per set of headers (most answers of a handler carry the same ones)."""
    raw = [
        (name, value.encode("latin-1"))
        for key, value in headers
        if (name := key.lower().encode("latin-1")) != b"content-type"
    ]
    return (*raw, (b"content-type", content_type.encode("latin-1")))


class Endpoint:
    """Every path but the health check, as a bare ASGI app (see `inferd.protocols.asgi`): a JSON
    handler's answer is cheap, so the framework's per-request objects would be a good part of it."""

    def __init__(self, dataplane: DataPlane, name: str) -> None:
        self.dataplane, self.name = dataplane, name
        self.counted = metrics.series(name, "abeja")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_answer(send, await self.answer(scope, receive))

    async def answer(self, scope: Scope, receive: Receive) -> Answer:
        entry = self.dataplane.registry.entry(self.name)
        if not entry.ready:
            return SERVICE_UNAVAILABLE
        model = entry.model
        assert isinstance(model, AbejaModel)
        content_type = asgi.header(scope, b"content-type")
        body = await asgi.read_body(receive)
        headers = asgi.TextHeaders(scope["headers"])
        call = Call(scope["method"], content_type, headers, body, scope["query_string"])
        started, answer = self.counted.begin(), None
        try:
            answer = await self.dataplane.run(self.name, lambda: model.respond(call))
            return answer
        finally:
            self.counted.end(started, answer is not None and answer.status < 400)


class HealthCheck:
    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_answer(send, HEALTHY if self.dataplane.ready() else SERVICE_UNAVAILABLE)


def routes(dataplane: DataPlane, name: str) -> list[BaseRoute]:
    endpoint = Endpoint(dataplane, name)
    return [
        Route("/health_check", HealthCheck(dataplane), methods=["GET"]),
        Route("/", endpoint, methods=ANY_METHOD),  # where clients post: matched before the fallback
        FallbackRoute("/{path:path}", endpoint, methods=ANY_METHOD),
    ]
