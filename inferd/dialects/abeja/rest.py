"""ABEJA's HTTP surface: ``GET /health_check``, and every other path is the model endpoint.

Health and "not ready" bodies are the proxy's. The endpoint hands the request to
`AbejaModel.respond`, which keeps a slow handler from holding up other requests.
"""

from __future__ import annotations

import functools

from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope

from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelNotReady
from inferd.dialects.abeja.responses import SERVICE_UNAVAILABLE, Answer
from inferd.dialects.abeja.service import AbejaModel, Call
from inferd.protocols import asgi
from inferd.protocols.fallback import ANY_METHOD, FallbackRoute

PROTOCOL = "abeja"

HEALTHY = Answer(200, b'{"status":"ok"}', "application/json")


def as_asgi(answer: Answer) -> asgi.Answer:
    return asgi.Answer(answer.status, answer.body, _raw_headers(answer.headers, answer.content_type))


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


class Endpoint(asgi.BareEndpoint):
    """Every path but the health check: a JSON handler's answer is cheap, so the framework's
    per-request objects would be a good part of it."""

    def __init__(self, dataplane: DataPlane, name: str) -> None:
        self.dataplane, self.name = dataplane, name

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        try:
            model_call = self.dataplane.call(self.name, PROTOCOL, AbejaModel)
        except ModelNotReady:
            return as_asgi(SERVICE_UNAVAILABLE)
        content_type = asgi.header(scope, b"content-type")
        body = await asgi.read_body(receive)
        headers = asgi.TextHeaders(scope["headers"])
        call = Call(scope["method"], content_type, headers, body, scope["query_string"])
        with model_call:
            answer = await model_call.run(lambda: model_call.model.respond(call))
            model_call.ok = answer.status < 400
        return as_asgi(answer)


class HealthCheck(asgi.BareEndpoint):
    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        return as_asgi(HEALTHY if self.dataplane.ready() else SERVICE_UNAVAILABLE)


def routes(dataplane: DataPlane, name: str) -> list[BaseRoute]:
    endpoint = Endpoint(dataplane, name)
    return [
        Route("/health_check", HealthCheck(dataplane), methods=["GET"]),
        Route("/", endpoint, methods=ANY_METHOD),  # where clients post: matched before the fallback
        FallbackRoute("/{path:path}", endpoint, methods=ANY_METHOD),
    ]
