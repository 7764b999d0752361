"""A gRPC service's method handlers made from its protobuf descriptor, without grpcio's generated
``add_XServicer_to_server``: that module imports grpcio (about 8 MiB), which inferd's own gRPC server
(`inferd.server.grpc_native`) never needs. Handlers carry the fields of ``grpc.RpcMethodHandler``,
which is all either server reads of them; a grpc.aio server is given grpcio's own
(``grpc.unary_unary_rpc_method_handler`` as ``make``)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

Deserializer = Callable[[bytes], Any]
Serializer = Callable[[Any], bytes]


class MethodHandler(NamedTuple):
    """``grpc.RpcMethodHandler``'s fields, as grpcio's ``unary_unary_rpc_method_handler`` fills them."""

    request_streaming: bool
    response_streaming: bool
    request_deserializer: Deserializer | None
    response_serializer: Serializer | None
    unary_unary: Callable[..., Any] | None
    unary_stream: Callable[..., Any] | None = None
    stream_unary: Callable[..., Any] | None = None
    stream_stream: Callable[..., Any] | None = None


def unary_unary(
    behavior: Callable[..., Any],
    request_deserializer: Deserializer | None = None,
    response_serializer: Serializer | None = None,
) -> MethodHandler:
    """A unary-unary handler (``grpc.unary_unary_rpc_method_handler``'s signature)."""
    return MethodHandler(False, False, request_deserializer, response_serializer, behavior)


def stream_stream(
    behavior: Callable[..., Any],
    request_deserializer: Deserializer | None = None,
    response_serializer: Serializer | None = None,
) -> MethodHandler:
    """A bidirectional-streaming handler (``grpc.stream_stream_rpc_method_handler``'s signature)."""
    return MethodHandler(True, True, request_deserializer, response_serializer, None, stream_stream=behavior)


def unary_handlers(
    messages: ModuleType,
    service: str,
    servicer: object,
    make: Callable[..., Any] = unary_unary,
) -> dict[str, Any]:
    """Method name → handler of every RPC of ``service`` (its full name, declared in the ``_pb2`` module
    ``messages``), each calling the servicer's method of the RPC's name, as generated code does.
    Only unary RPCs: streaming ones are left out, for the caller to add its own handler
    (V2's ``ModelStreamInfer``: `inferd.protocols.v2.grpc_stream`)."""
    handlers: dict[str, Any] = {}
    for method in messages.DESCRIPTOR.pool.FindServiceByName(service).methods:
        if method.client_streaming or method.server_streaming:
            continue
        request = getattr(messages, method.input_type.name)
        response = getattr(messages, method.output_type.name)
        handlers[method.name] = make(
            getattr(servicer, method.name),
            request_deserializer=request.FromString,
            response_serializer=response.SerializeToString,
        )
    return handlers
