"""The request spans of HTTP and gRPC calls, present only when tracing is on (`inferd.core.tracing`):
an outermost ASGI middleware and a grpc.aio interceptor
(`inferd.server.grpc_interceptors.TracedRpcs`), so a server without tracing does not even
check for it per request. Each takes the caller's W3C ``traceparent`` (header or metadata) as the
span's parent and records the answer's status."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferd.core.tracing import HEADERS, Tracer

_HEADER_KEYS = tuple(name.encode() for name in HEADERS)


class TracedRequests:
    """The span of every HTTP request, named ``METHOD /path``."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app, self.tracer = app, tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        carrier = [
            (key.decode(), value.decode("latin-1")) for key, value in scope["headers"] if key in _HEADER_KEYS
        ]
        attributes = {"http.request.method": method, "url.path": path}
        with self.tracer.server(f"{method} {path}", "http", carrier, attributes) as span:
            status = 500

            async def send_status(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await self.app(scope, receive, send_status)
            finally:
                self.tracer.finish(span, status=status)
