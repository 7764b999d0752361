"""The request spans of HTTP and gRPC calls, present only when tracing is on (`inferd.core.tracing`):
an outermost ASGI middleware and a grpc.aio interceptor, so a server without tracing does not even
check for it per request. Each takes the caller's W3C ``traceparent`` (header or metadata) as the
span's parent and records the answer's status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
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


class TracedRpcs(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpcio ships no hints
    """The span of every unary gRPC call, named after its method
    (``inference.GRPCInferenceService/ModelInfer``)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler
        behaviour, tracer, method = handler.unary_unary, self.tracer, details.method
        parent = state = None
        for key, value in details.invocation_metadata or ():
            if key == "traceparent":
                parent = value
            elif key == "tracestate":
                state = value
        name = method.lstrip("/")

        async def traced(request: Any, context: Any) -> Any:
            attributes = {"rpc.system": "grpc", "rpc.method": method}
            with tracer.server(name, "grpc", parent, state, attributes) as span:
                try:
                    answer = await behaviour(request, context)
                except BaseException:
                    tracer.finish(span, grpc_code=_code_name(context, "UNKNOWN"))
                    raise
                tracer.finish(span, grpc_code=_code_name(context, "OK"))
                return answer

        return grpc.unary_unary_rpc_method_handler(
            traced,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _code_name(context: Any, otherwise: str) -> str:
    code = context.code()
    return str(code.name) if isinstance(code, grpc.StatusCode) else otherwise
