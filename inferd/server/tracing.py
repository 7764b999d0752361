"""The request spans of HTTP and gRPC calls, present only when tracing is on (`inferd.core.tracing`):
an outermost ASGI middleware and a grpc.aio interceptor
(`inferd.server.grpc_interceptors.TracedRpcs`), so a server without tracing does not even
check for it per request. Each takes the caller's W3C ``traceparent`` (header or metadata) as the
span's parent and records the answer's status."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferd.core.tracing import Tracer


class TracedRequests:
    """The span of every HTTP request, named ``METHOD /path``."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app, self.tracer = app, tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        parent = state = None
        for key, value in scope["headers"]:
            if key == b"traceparent":
                parent = value.decode("latin-1")
            elif key == b"tracestate":
                state = value.decode("latin-1")
        attributes = {"http.request.method": method, "url.path": path}
        with self.tracer.server(f"{method} {path}", "http", parent, state, attributes) as span:
            answer = _Status(send)
            try:
                await self.app(scope, receive, answer.send)
            finally:
                self.tracer.finish(span, status=answer.status)


class _Status:
    """An ASGI ``send`` that notes the response's status (500 until one starts). A class, not a
    closure over a ``nonlocal``: it is made per request."""

    __slots__ = ("_send", "status")

    def __init__(self, send: Send) -> None:
        self._send, self.status = send, 500

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)
