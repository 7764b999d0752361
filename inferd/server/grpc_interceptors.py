"""The grpc.aio interceptors of a model server's gRPC port: bearer-token authentication (the gRPC side
of `inferd.server.auth`) and request spans (the gRPC side of `inferd.server.tracing`).

They live apart from their HTTP sides because subclassing ``grpc.aio.ServerInterceptor`` imports
grpc and protobuf (about 8 MiB and 60 ms): only a process that serves gRPC imports this module
(`inferd.server.grpc`, the platform's gRPC gateway), so ``inferd serve --no-grpc`` loads neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import grpc

from inferd.core.errors import Unauthenticated
from inferd.core.tracing import Tracer
from inferd.protocols.grpc_status import StatusCode
from inferd.protocols.status import status_of
from inferd.server.auth import Tokens


class GrpcBearerAuth(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpcio ships no hints
    """The gRPC side: every method but ``open_methods`` needs ``authorization: Bearer <token>``
    metadata, else UNAUTHENTICATED before the servicer runs."""

    def __init__(self, tokens: Tokens, open_methods: Iterable[str]) -> None:
        self.tokens, self.open_methods = tokens, frozenset(open_methods)

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or details.method in self.open_methods:
            return handler
        metadata = details.invocation_metadata or ()
        authorization = next((value for key, value in metadata if key == "authorization"), None)
        refused = self.tokens.refusal(authorization)
        return handler if refused is None else _refusing(handler, refused)


def _refusing(handler: Any, error: Unauthenticated) -> Any:
    """A handler that aborts every call with ``error`` without reading its request.

    grpc reads and parses a unary request in full before its behaviour runs (a 1 GiB message cost
    gigabytes before the refusal). A request-streaming behaviour receives an iterator it need not
    touch, and on the wire a unary request is a stream of one message: so the refusal is a
    request-streaming handler of the method's response kind, without a deserializer."""
    code = status_of(error).grpc

    async def refuse(requests: Any, context: Any) -> None:
        await context.abort(code, error.message)

    build = (
        grpc.stream_stream_rpc_method_handler
        if handler.response_streaming
        else grpc.stream_unary_rpc_method_handler
    )
    return build(refuse, response_serializer=handler.response_serializer)


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
        attributes = {"rpc.system": "grpc", "rpc.method": method}

        async def traced(request: Any, context: Any) -> Any:
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
    return str(code.name) if isinstance(code, (grpc.StatusCode, StatusCode)) else otherwise
