"""inferd's own HTTP/2 framing (`inferd.protocols.h2`) against the ``h2`` library's state machine, its
reference: the same random and mutated frame sequences, sent by a client after its preface, go to
a server-side connection of each; each must reach the same verdict, accepted or a connection error
with the same error code (the GOAWAY each writes).

The sequences are of the frames a gRPC server meets: SETTINGS (random parameters, random lengths),
PING, WINDOW_UPDATE of the connection, PRIORITY, RST_STREAM, DATA, unknown frame types (but ALTSVC,
which h2 parses), frames over
the size limit, GOAWAY, on stream 0, on an open stream and on idle ones. Left out are the few places
where h2 departs from RFC 9113 and inferd follows the RFC (h2 makes a zero WINDOW_UPDATE on a stream
and a stream depending on itself errors of the connection, not of the stream; it answers a SETTINGS
ACK with a payload with PROTOCOL_ERROR, not FRAME_SIZE_ERROR; it refuses frames after the client's
GOAWAY; once the client opened a stream it takes RST_STREAM for streams never opened; of a
parameter given twice in one SETTINGS it checks only the last value) and
stream windows, which inferd keeps only for streams it answers: tests/security/
test_grpc_http2.py checks those against a real server."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from typing import Any

import h2.config
import h2.connection
import h2.exceptions
import hpack
import hyperframe.frame
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferd.protocols.h2.frames import GOAWAY, PREFACE
from inferd.protocols.h2.sending import Corker
from inferd.protocols.h2.server import ServerConnection

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, WINDOW_UPDATE = 0, 1, 2, 3, 4, 6, 8
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
#: A request's header block as a gRPC client sends it (hpack's encoder), valid for both.
REQUEST = hpack.Encoder().encode(
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/inference.GRPCInferenceService/ModelInfer"),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
)
OPEN = struct.pack(">BHBBL", 0, len(REQUEST), HEADERS, END_HEADERS, 1) + REQUEST
#: Values near the edges the RFC draws for SETTINGS and windows.
EDGES = (0, 1, 2, 100, 16383, 16384, 65535, 2**24 - 1, 2**24, 2**31 - 2, 2**31 - 1, 2**31, 2**32 - 1)


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    length = len(payload)
    return struct.pack(">BHBBL", length >> 16, length & 0xFFFF, kind, flags, stream) + payload


values = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**32 - 1))
settings_frames = st.one_of(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 0x1234]), values),
        max_size=4,
        unique_by=lambda p: p[0],
    ).map(lambda pairs: frame(SETTINGS, 0, 0, b"".join(struct.pack(">HL", k, v) for k, v in pairs))),
    st.binary(max_size=20).map(lambda payload: frame(SETTINGS, 0, 0, payload)),
    st.just(frame(SETTINGS, ACK, 0, b"")),
    st.sampled_from([1, 3]).map(lambda stream: frame(SETTINGS, 0, stream, b"")),
)
pings = st.tuples(
    st.sampled_from([0, ACK]), st.sampled_from([0, 0, 0, 1]), st.one_of(st.just(8), st.integers(0, 16))
).map(lambda t: frame(PING, t[0], t[1], bytes(t[2])))
window_updates = st.tuples(
    st.one_of(
        st.sampled_from([0, 1, 1000, 2**31 - 1, 2**31 - 65535, 2**31 - 65536]), st.integers(0, 2**31 - 1)
    ),
    st.sampled_from([4, 4, 4, 3, 5]),
).map(lambda t: frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", t[0])[: t[1]].ljust(t[1], b"\0")))
idle_window_updates = st.sampled_from([3, 5, 2]).map(
    lambda s: frame(WINDOW_UPDATE, 0, s, struct.pack(">L", 1))
)
priorities = st.tuples(
    st.sampled_from([0, 1, 3, 5, 7]), st.sampled_from([0, 9, 11]), st.sampled_from([5, 5, 4, 6])
).map(lambda t: frame(PRIORITY, 0, t[0], (struct.pack(">LB", t[1], 16) + b"\0")[: t[2]]))
resets = st.tuples(st.sampled_from([0, 1, 1]), st.sampled_from([4, 4, 3, 5])).map(
    lambda t: frame(RST_STREAM, 0, t[0], struct.pack(">L", 8)[: t[1]].ljust(t[1], b"\0"))
)
datas = st.tuples(
    st.sampled_from([0, 1, 1, 3]), st.binary(max_size=64), st.sampled_from([0, END_STREAM])
).map(lambda t: frame(DATA, t[2], t[0], t[1]))
unknown = st.tuples(
    st.integers(11, 255), st.integers(0, 255), st.sampled_from([0, 1, 3]), st.binary(max_size=16)
).map(lambda t: frame(*t))
oversized = st.sampled_from([PING, SETTINGS, 0x42]).map(lambda kind: frame(kind, 0, 0, bytes(16385)))
goaways = st.tuples(st.sampled_from([0, 0, 1]), st.sampled_from([8, 8, 12, 7])).map(
    lambda t: frame(GOAWAY, 0, t[0], bytes(t[1]))
)
some_frame = st.one_of(
    settings_frames, pings, window_updates, idle_window_updates, priorities, resets, datas, unknown, oversized
)
sequences = st.tuples(st.booleans(), st.lists(some_frame, max_size=12), st.one_of(st.none(), goaways)).map(
    lambda t: (OPEN if t[0] else b"") + b"".join(t[1]) + (t[2] or b"")
)


class MemoryTransport(asyncio.Transport):
    """Where the connection under test writes: kept in memory."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def write(self, data: Any) -> None:
        self.written += data

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.written += data

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


class Stream:
    """A call that takes its request's DATA and credits it back (what a server's call does)."""

    def __init__(self, connection: Probe) -> None:
        self.connection = connection

    def request_data(self, data: memoryview, flow: int, end: bool) -> None:
        self.connection.credit(flow)

    def cancel(self) -> None:
        pass


class Probe(ServerConnection[Stream]):
    """inferd's server-side connection, each stream opened taken as a call."""

    def on_headers(self, stream: int, headers: list[tuple[bytes, bytes]], end: bool) -> None:
        if stream not in self.calls and self.opens(stream):
            self.calls[stream] = Stream(self)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()  # not run: only what the connection schedules lands on it
    yield loop
    loop.close()


def goaway_code(written: bytes) -> int | None:
    """The error code of the GOAWAY in ``written`` (frames), or None."""
    position = 0
    while position + 9 <= len(written):
        length = int.from_bytes(written[position : position + 3], "big")
        if written[position + 3] == GOAWAY:
            return int.from_bytes(written[position + 13 : position + 17], "big")
        position += 9 + length
    return None


def ours(loop: asyncio.AbstractEventLoop, sent: bytes) -> int | None:
    """inferd's verdict on ``sent``: None (accepted) or its GOAWAY's error code."""
    connection = Probe(Corker(loop))
    transport = MemoryTransport()
    connection.connection_made(transport)
    connection.data_received(PREFACE + frame(SETTINGS, 0, 0, b"") + sent)
    connection.flush()
    return goaway_code(bytes(transport.written))


def reference(sent: bytes) -> int | None:
    """h2's verdict on ``sent``: None (accepted) or the error code of its connection error."""
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    connection.initiate_connection()
    connection.data_to_send()
    try:
        connection.receive_data(PREFACE + frame(SETTINGS, 0, 0, b"") + sent)
    except h2.exceptions.ProtocolError:
        return goaway_code(connection.data_to_send())
    except hyperframe.frame.InvalidFrameError:  # pragma: no cover - h2 wraps these
        return goaway_code(connection.data_to_send())
    return None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=sequences)
def test_same_verdict_as_h2(loop: asyncio.AbstractEventLoop, sent: bytes) -> None:
    assert ours(loop, sent) == reference(sent)


def completed(sent: bytes) -> bytes | None:
    """``sent`` with the frame it ends within completed (zeros: h2 judges a frame once all of it
    is there, inferd from its header where that suffices), or None when it holds what h2 departs
    from RFC 9113 on (inferd follows the RFC): a SETTINGS ACK with a payload (FRAME_SIZE_ERROR,
    6.5), a RST_STREAM for a stream never opened once one was (PROTOCOL_ERROR, 5.1), a
    WINDOW_UPDATE with its reserved bit set (ignored, 6.9); or a frame a mutation made ALTSVC (h2
    parses it) or HEADERS (h2 checks their fields), but the request's own."""
    position = 0
    while position + 9 <= len(sent):
        length = int.from_bytes(sent[position : position + 3], "big")
        kind, flags = sent[position + 3], sent[position + 4]
        stream = int.from_bytes(sent[position + 5 : position + 9], "big") & 0x7FFFFFFF
        if (kind == SETTINGS and flags & ACK and length) or (kind == RST_STREAM and stream > 1):
            return None
        if kind == WINDOW_UPDATE and sent[position + 9 : position + 10] >= b"\x80":
            return None
        if kind == 10 or (kind == HEADERS and not (position == 0 and sent.startswith(OPEN))):
            return None
        if position + 9 + length > len(sent):
            return sent + bytes(position + 9 + length - len(sent))
        position += 9 + length
    return sent


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=sequences, cut=st.integers(0, 2**16), byte=st.integers(0, 255))
def test_same_verdict_as_h2_on_a_mutated_byte(
    loop: asyncio.AbstractEventLoop, sent: bytes, cut: int, byte: int
) -> None:
    """One byte of a sequence changed (a frame's length, type, flags, stream, or payload): the same
    verdict again. The request's HEADERS are left alone: h2 checks the headers of a request
    (pseudo-headers, their order, forbidden fields), which inferd leaves to the server above."""
    if not sent:
        return
    position = cut % len(sent)
    if sent.startswith(OPEN) and position < len(OPEN):
        position += len(OPEN)  # past the request's HEADERS
        if position >= len(sent):
            return
    mutated = completed(sent[:position] + bytes((byte,)) + sent[position + 1 :])
    if mutated is not None:
        assert ours(loop, mutated) == reference(mutated)


@pytest.mark.parametrize(
    ("sent", "code"),
    [
        (frame(SETTINGS, 0, 0, bytes(5)), 6),
        (frame(SETTINGS, 0, 0, struct.pack(">HL", 2, 2)), 1),
        (frame(SETTINGS, 0, 0, struct.pack(">HL", 4, 2**31)), 3),
        (frame(SETTINGS, 0, 0, struct.pack(">HL", 5, 16383)), 1),
        (frame(WINDOW_UPDATE, 0, 0, bytes(4)), 1),
        (frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 2**31 - 65535)), 3),
        (frame(PING, 0, 0, bytes(7)), 6),
        (frame(RST_STREAM, 0, 3, bytes(4)), 1),
        (frame(DATA, 0, 3, b"x"), 1),
    ],
)
def test_the_rfc_cases_agree(loop: asyncio.AbstractEventLoop, sent: bytes, code: int) -> None:
    assert ours(loop, sent) == reference(sent) == code
