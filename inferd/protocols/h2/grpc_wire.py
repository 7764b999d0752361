"""gRPC's own layer over HTTP/2: the 5-byte prefix of each message, the length limit on received
messages (`MessageSizes` where messages pass through, `MessageReader` where they are put together),
messages sent in pieces (`framed`), ``grpc-timeout`` values, and trailers-only status answers."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Protocol

import numpy as np

from inferd.protocols.h2.frames import Payload
from inferd.protocols.h2.hpack_out import encode_block
from inferd.protocols.h2.sending import BY_REFERENCE

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


class InPieces(Protocol):
    """A message that gives its serialization in pieces (`framed` sends them as they are): large
    pieces are views of memory the message already holds, so sending it copies none of them."""

    def wire_pieces(self) -> Iterable[Payload]: ...


def framed(pieces: Iterable[Payload]) -> tuple[int, list[Payload]]:
    """A message given in ``pieces``, as gRPC sends it: its length, and its 5-byte prefix and pieces
    as DATA payloads, with each run of small pieces joined (one frame, not one each) and each large
    piece kept as a byte view of its own memory (sent by reference)."""
    views = [piece if isinstance(piece, bytes) else memoryview(piece).cast("B") for piece in pieces]
    length = sum(len(view) for view in views)
    out: list[Payload] = []
    run: list[Payload] = [b"\x00" + length.to_bytes(4, "big")]
    for view in views:
        if len(view) < BY_REFERENCE:
            run.append(view)
            continue
        if run:
            out.append(b"".join(run))
            run = []
        out.append(view)
    if run:
        out.append(b"".join(run))
    return length, out


#: A message put together: whether it is compressed, and its bytes.
Message = tuple[bool, Payload]


class MessageReader:
    """One stream's messages put together from its DATA (`feed`), in `messages` once complete. Each
    prefix's length is held to ``limit`` before anything is allocated; then the message is copied
    once, into a buffer of that length (read-only views of it are handed on), or, when one DATA
    payload holds all of it, out of that payload. `partial`: a message begun and not complete.

    The buffer is a numpy allocation, as the REST body's (`inferd.protocols.asgi.BodyBuffer`): not
    zeroed, so its pages are touched only as data arrives (a client that declares much and sends
    little holds little), and malloc reuses the last big request's memory instead of faulting in
    fresh pages (an anonymous mapping per message cost about 1 ms per MiB here)."""

    __slots__ = ("buffer", "compressed", "filled", "limit", "messages", "prefix")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.prefix = b""
        self.buffer: memoryview | None = None
        self.filled = 0
        self.compressed = False
        self.messages: deque[Message] = deque()

    @property
    def partial(self) -> bool:
        return bool(self.prefix) or self.buffer is not None

    def feed(self, data: memoryview) -> int | None:
        """Read ``data``; the length a message declares over the limit (then nothing more of
        ``data`` is read), else None."""
        position, size = 0, len(data)
        while position < size:
            buffer = self.buffer
            if buffer is not None:
                step = min(len(buffer) - self.filled, size - position)
                buffer[self.filled : self.filled + step] = data[position : position + step]
                self.filled += step
                position += step
                if self.filled == len(buffer):
                    self.messages.append((self.compressed, memoryview(buffer).toreadonly()))
                    self.buffer = None
                continue
            if self.prefix or size - position < 5:
                taken = data[position : position + 5 - len(self.prefix)]
                self.prefix += taken
                position += len(taken)
                if len(self.prefix) < 5:
                    return None
                head, self.prefix = memoryview(self.prefix), b""
            else:
                head = data[position : position + 5]
                position += 5
            length = int.from_bytes(head[1:5], "big")
            if length > self.limit:
                return length
            if size - position >= length:  # all of it in this payload: the usual small message
                self.messages.append((bool(head[0]), bytes(data[position : position + length])))
                position += length
            else:
                self.buffer = np.empty(length, dtype=np.uint8).data
                self.filled, self.compressed = 0, bool(head[0])
        return None


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
