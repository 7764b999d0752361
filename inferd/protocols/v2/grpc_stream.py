"""Triton's streaming extension: ``ModelStreamInfer``, a bidirectional stream of ``ModelInferRequest``
in and ``ModelStreamInferResponse`` out (``tritonclient.grpc``'s ``start_stream`` /
``async_stream_infer``).

Kept apart from `inferd.protocols.v2.grpc` because a stream's failures are not the call's: where
``ModelInfer`` aborts with a status, a failed request on the stream (unknown model, bad tensors,
bytes that are no message) is answered by an ``error_message`` response carrying the request's id,
and the stream goes on. Requests are run one at a time and answered in the order they came.
When the client closes or resets the stream, the servers cancel the behaviour, and with it the
inference in flight.

Responses keep the tensors' bytes out of protobuf as ``ModelInfer``'s do (`grpc_wire`): a
``ModelStreamInferResponse`` is its field 2 (``infer_response``) written by hand around the
``InferAnswer``'s pieces.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from inferd.core.errors import InferdError
from inferd.protocols.status import error_message
from inferd.protocols.v2 import grpc_wire
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb

logger = logging.getLogger("inferd.protocols.v2.grpc")

_INFER_RESPONSE_TAG = bytes([2 << 3 | 2])  # ModelStreamInferResponse.infer_response, length-delimited
Infer = Callable[[grpc_wire.InferCall], Awaitable[grpc_wire.InferAnswer]]


@dataclass(frozen=True, slots=True)
class Malformed:
    """A message of the stream that could not be read as a ``ModelInferRequest``."""

    message: str


@dataclass(frozen=True, slots=True)
class StreamAnswer:
    """One ``ModelStreamInferResponse``: ``answer``, or ``error`` about the request ``failed``."""

    answer: grpc_wire.InferAnswer | None = None
    error: str = ""
    failed: pb.ModelInferRequest | None = None

    def wire_pieces(self) -> list[bytes | memoryview]:
        if self.answer is None:
            message = pb.ModelStreamInferResponse(error_message=self.error)
            if self.failed is not None:  # the id, so a client can tell which request failed
                failed = self.failed
                message.infer_response.model_name = failed.model_name
                message.infer_response.model_version = failed.model_version
                message.infer_response.id = failed.id
            return [message.SerializeToString()]
        pieces = self.answer.wire_pieces()
        size = sum(memoryview(piece).nbytes for piece in pieces)
        return [_INFER_RESPONSE_TAG, grpc_wire.varint(size), *pieces]

    def SerializeToString(self) -> bytes:
        return serialize(self)


def serialize(answer: StreamAnswer) -> bytes:
    return b"".join(answer.wire_pieces())


def parse(wire: bytes | memoryview) -> grpc_wire.InferCall | Malformed:
    """A stream's message; bytes that are no ``ModelInferRequest`` become `Malformed` (raising
    here would end the whole stream)."""
    try:
        return grpc_wire.parse_request(wire)
    except Exception as exc:  # protobuf's DecodeError
        return Malformed(f"malformed request: {exc or type(exc).__name__}")


def handler(infer: Infer, make_stream: Callable[..., Any]) -> Any:
    """``ModelStreamInfer``'s handler, running each request with ``infer`` (``V2Servicer.infer``)."""

    async def ModelStreamInfer(
        requests: AsyncIterator[grpc_wire.InferCall | Malformed], context: Any
    ) -> AsyncIterator[StreamAnswer]:
        async for request in requests:
            if isinstance(request, Malformed):
                yield StreamAnswer(error=request.message)
                continue
            try:
                answer = await infer(request)
            except Exception as exc:
                if not isinstance(exc, InferdError):
                    logger.exception("gRPC ModelStreamInfer failed")
                yield StreamAnswer(error=error_message(exc), failed=request.message)
                continue
            yield StreamAnswer(answer)

    return make_stream(ModelStreamInfer, request_deserializer=parse, response_serializer=serialize)
