"""Malformed gRPC requests answered INVALID_ARGUMENT, on every service the server registers.

grpc.aio parses a request with the handler's ``request_deserializer`` before any servicer code
runs; when the bytes are not the message, the exception escapes into grpc itself, which logs it and
answers ``UNKNOWN: Unexpected DecodeError``. `Registrar` stands in for the server while services
register: every unary-request handler gets a deserializer that turns bad bytes into a
`MalformedRequest` value, and a behaviour that aborts such a call with INVALID_ARGUMENT and a
message saying what was wrong, before the servicer sees it. Calls of well-formed requests pay one
``isinstance``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc

Handler = Any  # grpc.RpcMethodHandler; grpcio ships no type hints
Deserializer = Callable[[bytes], Any]


class MalformedRequest:
    """What a tolerant deserializer returns for bytes that are not its message."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def tolerant(deserializer: Deserializer) -> Deserializer:
    """``deserializer``, returning a `MalformedRequest` where it raises."""

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:  # protobuf's DecodeError, or whatever a custom deserializer raises
            return MalformedRequest(f"malformed request: {exc or type(exc).__name__}")

    return deserialize


def checked(handler: Handler) -> Handler:
    """``handler`` answering malformed requests INVALID_ARGUMENT; streamed requests and handlers
    without a deserializer are left as they are."""
    if handler is None or handler.request_streaming or handler.request_deserializer is None:
        return handler
    if handler.response_streaming:
        return handler._replace(
            request_deserializer=tolerant(handler.request_deserializer),
            unary_stream=_unary_stream(handler.unary_stream),
        )
    return handler._replace(
        request_deserializer=tolerant(handler.request_deserializer),
        unary_unary=_unary_unary(handler.unary_unary),
    )


def _unary_unary(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def call(request: Any, context: Any) -> Any:
        if isinstance(request, MalformedRequest):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
        return await behaviour(request, context)

    return call


def _unary_stream(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def call(request: Any, context: Any) -> Any:
        if isinstance(request, MalformedRequest):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
        async for response in behaviour(request, context):
            yield response

    return call


class _CheckedGenericHandler(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpcio ships no hints
    """A generic handler (looked up per call) whose handlers are `checked`, each wrapped once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.wrapped: dict[str, tuple[Handler, Handler]] = {}  # method → (handler, checked handler)

    def service(self, details: Any) -> Handler:
        handler = self.inner.service(details)
        if handler is None:
            return None
        found = self.wrapped.get(details.method)
        if found is None or found[0] is not handler:
            found = self.wrapped[details.method] = (handler, checked(handler))
        return found[1]


class Registrar:
    """The server as services see it while they register (``add_XServicer_to_server(servicer,
    registrar)``): their handlers are registered `checked`; anything else reaches the server."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        self.server.add_generic_rpc_handlers(tuple(_CheckedGenericHandler(inner) for inner in handlers))

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Handler]) -> None:
        self.server.add_registered_method_handlers(
            service, {method: checked(handler) for method, handler in handlers.items()}
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)
