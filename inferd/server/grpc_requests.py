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

from collections.abc import Callable, Mapping
from typing import Any

from inferd.protocols.grpc_status import status_code

Handler = Any  # grpc.RpcMethodHandler or a grpc_handlers.MethodHandler
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
    """``handler`` answering malformed requests INVALID_ARGUMENT. Streaming RPCs (inferd registers
    none) and handlers without a deserializer are left as they are."""
    if handler.request_streaming or handler.response_streaming or handler.request_deserializer is None:
        return handler
    return handler._replace(
        request_deserializer=tolerant(handler.request_deserializer),
        unary_unary=_unary_unary(handler.unary_unary),
    )


def _unary_unary(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def call(request: Any, context: Any) -> Any:
        if isinstance(request, MalformedRequest):
            await context.abort(status_code("INVALID_ARGUMENT"), request.message)
        return await behaviour(request, context)

    return call


class Registrar:
    """The server as services see it while they register (``add_XServicer_to_server(servicer,
    registrar)``): the handlers they register by method name are registered `checked`; anything
    else reaches the server as it is. Generated code (grpcio-tools >= 1.62, all of inferd's) registers
    every method by name as well as in a generic handler, and grpc serves a method by its named
    handler first, so the generic ones are never used for those methods."""

    def __init__(self, server: Any) -> None:  # a grpc.aio.Server or a NativeGrpcServer
        self.server = server

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Handler]) -> None:
        self.server.add_registered_method_handlers(
            service, {method: checked(handler) for method, handler in handlers.items()}
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)
