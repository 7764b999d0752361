"""The grpc.aio interceptors of a model server's gRPC port: bearer-token authentication (the gRPC side
of `inferd.server.auth`) and request spans (the gRPC side of `inferd.server.tracing`).

They live apart from their HTTP sides because subclassing ``grpc.aio.ServerInterceptor`` imports
grpc and protobuf (about 8 MiB and 60 ms): only a process that serves gRPC imports this module
(`inferd.server.grpc`, the platform's gRPC gateway), so ``inferd serve --no-grpc`` loads neither.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any
from urllib.parse import unquote

import grpc

from inferd.core.errors import TooManyFailures, Unauthenticated
from inferd.core.tracing import Tracer
from inferd.protocols.grpc_status import StatusCode
from inferd.protocols.status import status_of
from inferd.server.auth import INVALID, Tokens
from inferd.server.backoff import Backoff


class GrpcBearerAuth(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpcio ships no hints
    """The gRPC side: every method but ``open_methods`` needs ``authorization: Bearer <token>``
    metadata, else UNAUTHENTICATED before the servicer runs; a client past its wrong tokens is
    slowed, then refused RESOURCE_EXHAUSTED (`inferd.server.backoff`)."""

    def __init__(self, tokens: Tokens, open_methods: Iterable[str]) -> None:
        self.tokens, self.open_methods = tokens, frozenset(open_methods)

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or details.method in self.open_methods:
            return handler
        metadata = details.invocation_metadata or ()
        authorization = next((value for key, value in metadata if key == "authorization"), None)
        refused = self.tokens.refusal(authorization)
        if refused is None:
            return handler
        # the peer's address is the call's context's: a wrong token is counted when the refusal runs
        return _refusing(handler, refused, self.tokens.backoff if refused.message == INVALID else None)


def peer_address(peer: str) -> str | None:
    """The address in a gRPC peer (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``; grpcio may write the
    brackets percent-encoded)."""
    kind, _, rest = peer.partition(":")
    rest = unquote(rest)
    if kind == "ipv6" and rest.startswith("["):
        return rest[1:].partition("]")[0]
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    return peer or None


def _refusing(handler: Any, error: Unauthenticated, backoff: Backoff | None = None) -> Any:
    """A handler that aborts every call with ``error`` without reading its request.

    grpc reads and parses a unary request in full before its behaviour runs (a 1 GiB message cost
    gigabytes before the refusal). A request-streaming behaviour receives an iterator it need not
    touch, and on the wire a unary request is a stream of one message: so the refusal is a
    request-streaming handler of the method's response kind, without a deserializer."""

    async def refuse(requests: Any, context: Any) -> None:
        answered: Unauthenticated | TooManyFailures = error
        if backoff is not None:
            address = peer_address(context.peer())
            slowed = backoff.failed(address)
            if slowed is not None:
                await backoff.hold(address, slowed)
                answered = slowed
        await context.abort(status_of(answered).grpc, answered.message)

    async def refuse_streaming(requests: Any, context: Any) -> AsyncIterator[Any]:
        # an async generator, as inferd's own server wants a response-streaming behaviour to be
        await refuse(requests, context)
        return
        yield  # pragma: no cover  # makes this a generator

    if handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(
            refuse_streaming, response_serializer=handler.response_serializer
        )
    return grpc.stream_unary_rpc_method_handler(refuse, response_serializer=handler.response_serializer)


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
