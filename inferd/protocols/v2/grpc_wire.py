"""``ModelInfer``'s messages on the wire, with the tensors' bytes kept out of protobuf.

Parsed by protobuf, a request's ``raw_input_contents`` is copied into protobuf's arena and again
into a new ``bytes`` each time a field is read; a response's ``raw_output_contents`` needs the
arrays as ``bytes`` (a copy), copied into the message, then into its serialization: three to four
copies of every tensor, all alive at once. Here the request's bytes, as grpc hands them over, are
walked field by field: ``raw_input_contents`` (field 7) become views of those bytes, and only the
other fields (names, shapes, parameters: small) go through protobuf. A response is its message
without ``raw_output_contents``, serialized by protobuf, followed by each output's field 6 written
by hand around the array's own memory, so the tensor is copied once, into the bytes grpcio sends;
inferd's own server sends those pieces as they are (`InferAnswer.wire_pieces`), copying nothing.
Protobuf allows a message's fields in any order, and repeated fields concatenate, so either form is
the same message to any reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb

RAW_INPUT_FIELD = 7  # ModelInferRequest.raw_input_contents
RAW_OUTPUT_FIELD = 6  # ModelInferResponse.raw_output_contents
_LENGTH_DELIMITED = 2
_RAW_OUTPUT_TAG = bytes([RAW_OUTPUT_FIELD << 3 | _LENGTH_DELIMITED])
#: A key (field number and wire type) fits in 32 bits: protobuf reads at most 5 bytes of it and
#: refuses a message with a longer one (an overlong encoding), so the walk leaves such bytes to it.
_MAX_KEY_BYTES = 5


@dataclass(frozen=True, slots=True)
class InferCall:
    """A received ``ModelInferRequest``: ``message`` holds every field but ``raw_input_contents``,
    ``raw`` holds those, as read-only views of ``wire`` (the request's bytes as received)."""

    message: pb.ModelInferRequest
    raw: Sequence[memoryview]
    wire: bytes | memoryview

    @property
    def model_name(self) -> str:
        return str(self.message.model_name)

    @property
    def id(self) -> str:
        return str(self.message.id)

    def SerializeToString(self) -> bytes:
        """The request's bytes (for the payload log: a copy where ``wire`` is a view)."""
        return self.wire if isinstance(self.wire, bytes) else bytes(self.wire)


def parse_request(wire: bytes | memoryview) -> InferCall:
    """``wire`` as an `InferCall`. Bytes that are no message are left to protobuf to refuse (its
    DecodeError, as before): the walk only stops at what it cannot read."""
    try:
        kept, raw = _split(memoryview(wire).toreadonly(), RAW_INPUT_FIELD)
    except ValueError:
        message = pb.ModelInferRequest.FromString(wire)  # raises for what is not a message
        return InferCall(message, [memoryview(blob) for blob in message.raw_input_contents], wire)
    return InferCall(pb.ModelInferRequest.FromString(b"".join(kept)), raw, wire)


@dataclass(frozen=True, slots=True)
class InferAnswer:
    """A ``ModelInferResponse`` to send: ``message`` without ``raw_output_contents``, and those."""

    message: pb.ModelInferResponse
    raw: Sequence[bytes | memoryview]

    def SerializeToString(self) -> bytes:
        return serialize_response(self)

    def wire_pieces(self) -> list[bytes | memoryview]:
        """The response's bytes in pieces: its message's, then each raw output as field 6 around
        its own memory (the output arrays, uncopied)."""
        parts: list[bytes | memoryview] = [self.message.SerializeToString()]
        for blob in self.raw:
            parts += [_RAW_OUTPUT_TAG, varint(memoryview(blob).nbytes), blob]
        return parts


def serialize_response(answer: InferAnswer) -> bytes:
    """The response's bytes (`InferAnswer.wire_pieces`, joined: grpcio sends bytes)."""
    return b"".join(answer.wire_pieces())


def _split(view: memoryview, field: int) -> tuple[list[memoryview], list[memoryview]]:
    """The top-level fields of a message: those other than ``field`` as their encoded bytes, and
    the values of ``field`` (length-delimited). ValueError where the bytes cannot be walked."""
    kept, values, offset, end = [], [], 0, len(view)
    while offset < end:
        start = offset
        key, offset = _read_varint(view, offset)
        if offset - start > _MAX_KEY_BYTES:
            raise ValueError("a field's key is longer than protobuf reads")
        kind = key & 7
        if kind == 0:
            _, offset = _read_varint(view, offset)
        elif kind == 1:
            offset += 8
        elif kind == 5:
            offset += 4
        elif kind == _LENGTH_DELIMITED:
            length, offset = _read_varint(view, offset)
            if offset + length > end:
                raise ValueError("a field runs past the end of the message")
            if key >> 3 == field:
                values.append(view[offset : offset + length])
                offset += length
                continue
            offset += length
        else:
            raise ValueError(f"wire type {kind} is not used by this message")
        if offset > end:
            raise ValueError("a field runs past the end of the message")
        kept.append(view[start:offset])
    return kept, values


def _read_varint(view: memoryview, offset: int) -> tuple[int, int]:
    value = shift = 0
    while offset < len(view) and shift < 64:
        byte = view[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
    raise ValueError("a varint runs past the end of the message or past 64 bits")


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
