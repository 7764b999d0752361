"""gRPC's own layer over HTTP/2: the 5-byte prefix of each message, the length limit on received
messages (`MessageSizes`), ``grpc-timeout`` values, and trailers-only status answers."""

from __future__ import annotations

from inferd.protocols.h2.hpack_out import encode_block

#: Seconds per unit of a ``grpc-timeout`` value (hours, minutes, seconds, milli-, micro-, nanoseconds).
TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def timeout_seconds(value: bytes) -> float | None:
    """A ``grpc-timeout`` header's value in seconds (``"100m"`` → 0.1); None when it is malformed."""
    text = value.decode("latin-1")
    unit = TIMEOUT_UNITS.get(text[-1:])
    digits = text[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        return None
    return int(digits) * unit


def prefixed(message: bytes) -> bytes:
    """``message`` as gRPC sends it: uncompressed flag, 4-byte big-endian length, the bytes."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


class MessageSizes:
    """Follows the 5-byte prefixes of a request's messages; `feed` says when one is over ``limit``."""

    __slots__ = ("left", "limit", "prefix")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = 0
        self.prefix = b""

    def feed(self, data: bytes) -> int | None:
        """The length of a message over the limit that ``data`` starts, else None."""
        size = len(data)
        if not self.left and not self.prefix and size >= 5:
            length = int.from_bytes(data[1:5], "big")
            if length + 5 == size:  # one whole message: the usual case
                return length if length > self.limit else None
        position = 0
        while position < size:
            if self.left:
                step = min(self.left, size - position)
                self.left -= step
                position += step
                continue
            need = 5 - len(self.prefix)
            self.prefix += data[position : position + need]
            position += need
            if len(self.prefix) == 5:
                length = int.from_bytes(self.prefix[1:5], "big")
                self.prefix = b""
                if length > self.limit:
                    return length
                self.left = length
        return None


def grpc_message(text: str) -> bytes:
    """``text`` as a ``grpc-message`` value: UTF-8, percent-encoding all but printable ASCII."""
    return b"".join(
        bytes((byte,)) if 0x20 <= byte <= 0x7E and byte != 0x25 else b"%%%02X" % byte
        for byte in text.encode()
    )


def status_block(code: int, message: str) -> bytes:
    """A trailers-only gRPC answer: status ``code`` (a gRPC code's number) and ``message``."""
    return encode_block(
        (
            (b":status", b"200"),
            (b"content-type", b"application/grpc"),
            (b"grpc-status", str(code).encode()),
            (b"grpc-message", grpc_message(message)),
        )
    )
