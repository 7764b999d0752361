"""The methods the native gRPC server serves, filled the way grpcio's server is: generated
``add_XServicer_to_server(servicer, table)`` registers each method's handler by name (and a generic
handler, asked only for methods not registered by name), so servicers, `grpc_requests.Registrar` and
the ``grpc.aio.ServerInterceptor`` s of `grpc_interceptors` serve on either server unchanged."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from inferd.server.grpc_context import Metadata

Handler = Any  # grpc.RpcMethodHandler; grpcio ships no type hints
Interceptor = Any  # grpc.aio.ServerInterceptor


class CallDetails(NamedTuple):
    """What interceptors and generic handlers are told of a call (``grpc.HandlerCallDetails``)."""

    method: str
    invocation_metadata: Metadata


class MethodTable:
    """``/service/method`` → handler; the interceptors wrap each call's handler as grpc.aio's do."""

    def __init__(self, interceptors: Sequence[Interceptor] = ()) -> None:
        self.handlers: dict[str, Handler] = {}
        self.generic: list[Any] = []
        self.interceptors = tuple(interceptors)

    # What generated code calls on a server
    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Handler]) -> None:
        for method, handler in handlers.items():
            self.handlers[f"/{service}/{method}"] = handler

    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        self.generic.extend(handlers)

    # What the server asks
    def find(self, details: CallDetails) -> Handler | None:
        """The method's handler before interceptors; None: no such method."""
        handler = self.handlers.get(details.method)
        if handler is not None:
            return handler
        for generic in self.generic:
            handler = generic.service(details)
            if handler is not None:
                return handler
        return None

    async def resolve(self, details: CallDetails) -> Handler | None:
        """The method's handler as the interceptors, outermost first, make it."""
        continuation: Callable[[CallDetails], Awaitable[Handler | None]] = self._found
        for interceptor in reversed(self.interceptors):
            continuation = _chained(interceptor, continuation)
        return await continuation(details)

    async def _found(self, details: CallDetails) -> Handler | None:
        return self.find(details)


def _chained(
    interceptor: Interceptor, continuation: Callable[[CallDetails], Awaitable[Handler | None]]
) -> Callable[[CallDetails], Awaitable[Handler | None]]:
    async def intercepted(details: CallDetails) -> Handler | None:
        return await interceptor.intercept_service(continuation, details)

    return intercepted
