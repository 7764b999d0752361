"""HTTP/2 frames as RFC 9113 defines them: types, flags, error codes, the 9-byte header, and the
checks a received frame's header and SETTINGS payload must pass before anything acts on them
(`check_frame`, `received_settings`), each failing with the error code the RFC names.

Kept apart from the connection (`inferd.protocols.h2.connection`) so the rules read in one place and
the connection module stays about streams and windows."""

from __future__ import annotations

from struct import pack, unpack_from
from typing import TypeVar

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    range(10)
)
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 5, 6, 7, 8, 9
ENHANCE_YOUR_CALM = 0xB
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DEFAULT_WINDOW = 65535
MAX_FRAME = 16384
#: The largest stream id, and the largest flow-control window (RFC 9113 6.9.1).
LAST_STREAM_ID = MAX_WINDOW = (1 << 31) - 1
#: The largest SETTINGS_MAX_FRAME_SIZE a peer may announce (RFC 9113 6.5.2).
LARGEST_FRAME = (1 << 24) - 1
#: SETTINGS identifiers (RFC 9113 6.5.2, and RFC 8441's for extended CONNECT).
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE = 1, 2, 3, 4, 5
ENABLE_CONNECT_PROTOCOL = 8
#: The payload length each fixed-size frame type must have.
FIXED_LENGTH = {PRIORITY: 5, RST_STREAM: 4, PING: 8, WINDOW_UPDATE: 4}
#: Frame types that belong to a stream (never stream 0), and those of the connection (only stream 0).
ON_STREAMS = frozenset((DATA, HEADERS, PRIORITY, RST_STREAM, PUSH_PROMISE, CONTINUATION))
ON_CONNECTION = frozenset((SETTINGS, PING, GOAWAY))

Payload = bytes | memoryview
P = TypeVar("P", bytes, memoryview)


class ProtocolViolation(Exception):
    """The peer broke HTTP/2: the connection ends with GOAWAY ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def frame(kind: int, flags: int, stream: int, payload: Payload = b"") -> bytes:
    return frame_header(kind, flags, stream, len(payload)) + payload


def frame_header(kind: int, flags: int, stream: int, length: int) -> bytes:
    return pack(">BHBBL", length >> 16, length & 0xFFFF, kind, flags, stream)


def check_frame(kind: int, flags: int, stream: int, length: int) -> None:
    """A received frame's header against RFC 9113 section 6: its stream (0 or not, as its type
    says), its length within our SETTINGS_MAX_FRAME_SIZE and, for types of a fixed size, that
    size (in that order, as h2 checks them)."""
    if (stream == 0 and kind in ON_STREAMS) or (stream != 0 and kind in ON_CONNECTION):
        raise ProtocolViolation(PROTOCOL_ERROR)
    if length > MAX_FRAME:
        raise ProtocolViolation(FRAME_SIZE_ERROR)
    fixed = FIXED_LENGTH.get(kind)
    if fixed is not None and length != fixed:
        raise ProtocolViolation(FRAME_SIZE_ERROR)
    if kind == SETTINGS and (length % 6 or (flags & ACK and length)):
        raise ProtocolViolation(FRAME_SIZE_ERROR)
    if kind == GOAWAY and length < 8:
        raise ProtocolViolation(FRAME_SIZE_ERROR)


def received_settings(payload: bytes) -> list[tuple[int, int]]:
    """A SETTINGS payload's parameters, each value checked (RFC 9113 6.5.2); unknown ones are kept
    (and ignored by the connection)."""
    parameters = []
    for offset in range(0, len(payload), 6):
        key, value = unpack_from(">HL", payload, offset)
        if key in (ENABLE_PUSH, ENABLE_CONNECT_PROTOCOL) and value > 1:
            raise ProtocolViolation(PROTOCOL_ERROR)
        if key == INITIAL_WINDOW_SIZE and value > MAX_WINDOW:
            raise ProtocolViolation(FLOW_CONTROL_ERROR)
        if key == MAX_FRAME_SIZE and not MAX_FRAME <= value <= LARGEST_FRAME:
            raise ProtocolViolation(PROTOCOL_ERROR)
        parameters.append((key, value))
    return parameters


def unpadded(payload: P, flags: int) -> P:
    """``payload`` without its padding (RFC 9113 6.1): a frame too short for its Pad Length field is
    FRAME_SIZE_ERROR (4.2), padding as long as the payload or longer PROTOCOL_ERROR."""
    if not flags & PADDED:
        return payload
    if not payload:
        raise ProtocolViolation(FRAME_SIZE_ERROR)
    if payload[0] >= len(payload):
        raise ProtocolViolation(PROTOCOL_ERROR)
    return payload[1 : len(payload) - payload[0]]
