"""Attacks on an HTTP/2 (gRPC) port, spoken on a raw socket as a hostile client would: floods of
PING or of streams opened and reset at once, sent without reading the answers, broken SETTINGS and
WINDOW_UPDATE frames, and a unary call that sends message after message and never ends. Each
returns what the server answered (the frames it wrote before closing), for the tests of inferd's own
gRPC server (tests/security/test_grpc_http2.py) and of the platform's gRPC gateway
(tests/platform/gateway/test_grpc_http2.py). Traffic goes only to the address given (loopback)."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS = 0x1, 0x4
NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, CANCEL = 0, 1, 3, 6, 8
ENHANCE_YOUR_CALM = 0xB
MIB = 2**20


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    length = len(payload)
    return struct.pack(">BHBBL", length >> 16, length & 0xFFFF, kind, flags, stream) + payload


def request_block(path: str, authority: str = "127.0.0.1") -> bytes:
    """A gRPC call's header block (hpack's encoder, not the server's)."""
    return hpack.Encoder().encode(
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
    )


def rss(pid: int, key: str = "VmRSS") -> int:
    """Memory of process ``pid`` in bytes: its resident set (``VmRSS``) or its peak (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


@dataclass
class Answer:
    """What the server wrote: its frames (type, flags, stream, payload), and whether it closed."""

    frames: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    closed: bool = False

    def goaway(self) -> int | None:
        """The error code of the server's GOAWAY (the last one), or None without one."""
        codes = [
            struct.unpack(">LL", payload[:8])[1] for kind, _, _, payload in self.frames if kind == GOAWAY
        ]
        return codes[-1] if codes else None

    def resets(self, stream: int | None = None) -> list[int]:
        """The error codes of the server's RST_STREAMs (on ``stream``, or on any)."""
        return [
            struct.unpack(">L", payload)[0]
            for kind, _, on, payload in self.frames
            if kind == RST_STREAM and stream in (None, on)
        ]

    def count(self, kind: int) -> int:
        return sum(1 for frame_ in self.frames if frame_[0] == kind)


def parse(data: bytes) -> list[tuple[int, int, int, bytes]]:
    frames, position = [], 0
    while position + 9 <= len(data):
        length = int.from_bytes(data[position : position + 3], "big")
        if position + 9 + length > len(data):
            break
        kind, flags = data[position + 3], data[position + 4]
        stream = int.from_bytes(data[position + 5 : position + 9], "big") & 0x7FFFFFFF
        frames.append((kind, flags, stream, data[position + 9 : position + 9 + length]))
        position += 9 + length
    return frames


def connect(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    assert host in ("127.0.0.1", "localhost", "[::1]"), address  # loopback only
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
    return sock


def read_all(sock: socket.socket, seconds: float) -> Answer:
    """Read what the server writes until it closes (or ``seconds`` pass)."""
    data = bytearray()
    closed = False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            break
        except OSError:  # reset
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    return Answer(parse(bytes(data)), closed)


def exchange(address: str, payload: bytes, seconds: float = 3.0) -> Answer:
    """Send ``payload`` after the preface and SETTINGS; what the server answers within ``seconds``
    (it closes the connection on a connection error, so that returns at once)."""
    with connect(address) as sock:
        sock.sendall(payload)
        return read_all(sock, seconds)


def flood(address: str, unit: bytes, count: int, seconds: float, wait: float = 3.0) -> tuple[int, Answer]:
    """Send ``unit`` up to ``count`` times in batches without reading anything, for at most
    ``seconds``; then read what the server wrote (for ``wait`` seconds at most, unless it closes).
    How many units went out, and the answer."""
    batch = 1000
    sent = 0
    with connect(address) as sock:
        sock.settimeout(0.5)
        deadline = time.monotonic() + seconds
        chunk = unit * batch
        while sent < count and time.monotonic() < deadline:
            try:
                sock.sendall(chunk)
            except TimeoutError:  # the server stopped reading: it is not reading while we do not
                break
            except OSError:  # the server closed (reset) the connection
                break
            sent += batch
        return sent, read_all(sock, wait)


def ping_flood(
    address: str, count: int = 500_000, seconds: float = 5.0, wait: float = 3.0
) -> tuple[int, Answer]:
    return flood(address, frame(PING, 0, 0, b"attack!!"), count, seconds, wait)


def rapid_reset(address: str, path: str, count: int = 100_000, seconds: float = 5.0) -> tuple[int, Answer]:
    """HEADERS opening a call, RST_STREAM CANCEL at once, on stream after stream (CVE-2023-44487)."""
    block = request_block(path)
    units = b"".join(
        frame(HEADERS, END_HEADERS, stream, block) + frame(RST_STREAM, 0, stream, struct.pack(">L", CANCEL))
        for stream in range(1, 2 * 1000, 2)
    )
    sent = 0
    next_stream = 1
    with connect(address) as sock:
        sock.settimeout(0.5)
        deadline = time.monotonic() + seconds
        while sent < count and time.monotonic() < deadline and next_stream < 2**31 - 2000:
            batch = units if next_stream == 1 else renumbered(units, next_stream - 1)
            try:
                sock.sendall(batch)
            except (TimeoutError, OSError):
                break
            sent += 1000
            next_stream += 2000
        return sent, read_all(sock, 3.0)


def renumbered(units: bytes, offset: int) -> bytes:
    """``units`` with every frame's stream id moved up by ``offset``."""
    out = bytearray(units)
    position = 0
    while position < len(out):
        length = int.from_bytes(out[position : position + 3], "big")
        stream = int.from_bytes(out[position + 5 : position + 9], "big") + offset
        out[position + 5 : position + 9] = stream.to_bytes(4, "big")
        position += 9 + length
    return bytes(out)


@dataclass
class UnaryFlood:
    """A unary call whose request sends message after message and never ends, within the flow
    control the server grants (h2's client keeps the windows): what went out and how it ended."""

    sent: int = 0
    reset: int | None = None
    status: str | None = None


@contextmanager
def grpc_stream(address: str, path: str) -> Iterator[tuple[socket.socket, h2.connection.H2Connection]]:
    """A connection to ``address`` (the ``h2`` library as the client) with stream 1 open on the gRPC
    method ``path``, its headers sent."""
    host, _, port = address.rpartition(":")
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        connection.initiate_connection()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1")]
        connection.send_headers(1, [*headers, ("content-type", "application/grpc"), ("te", "trailers")])
        sock.sendall(connection.data_to_send())
        yield sock, connection


def unary_flood(
    address: str, path: str, total: int, message: int = 16 * 1024, seconds: float = 10.0
) -> UnaryFlood:
    outcome = UnaryFlood()
    body = b"\x00" + (message - 5).to_bytes(4, "big") + bytes(message - 5)  # one whole gRPC message each
    with grpc_stream(address, path) as (sock, connection):
        deadline = time.monotonic() + seconds
        offset = 0
        while outcome.sent < total and outcome.reset is None and time.monotonic() < deadline:
            window = min(connection.local_flow_control_window(1), connection.max_outbound_frame_size)
            if window > 0:
                chunk = body[offset : offset + window]
                try:
                    connection.send_data(1, chunk)
                except h2.exceptions.StreamClosedError:
                    break
                offset = (offset + len(chunk)) % len(body)
                outcome.sent += len(chunk)
                sock.sendall(connection.data_to_send())
                continue
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                received = sock.recv(1 << 16)
            except TimeoutError:
                break
            if not received:
                break
            for event in connection.receive_data(received):
                if isinstance(event, h2.events.StreamReset):
                    outcome.reset = event.error_code
                elif isinstance(event, (h2.events.TrailersReceived, h2.events.ResponseReceived)):
                    for name, value in event.headers:
                        if name == b"grpc-status":
                            outcome.status = value.decode()
            sock.sendall(connection.data_to_send())
        # What the server says after the last of it (its answer may follow what was sent).
        sock.settimeout(1.0)
        try:
            while outcome.reset is None:
                received = sock.recv(1 << 16)
                if not received:
                    break
                for event in connection.receive_data(received):
                    if isinstance(event, h2.events.StreamReset):
                        outcome.reset = event.error_code
                    elif isinstance(event, (h2.events.TrailersReceived, h2.events.ResponseReceived)):
                        for name, value in event.headers:
                            if name == b"grpc-status":
                                outcome.status = value.decode()
        except (TimeoutError, OSError, h2.exceptions.ProtocolError):
            pass
    return outcome


#: Frames RFC 9113 makes a connection error, and the code of the GOAWAY each must get.
BROKEN_FRAMES = (
    (frame(SETTINGS, 0, 0, b"\x00\x04\x00\x01\x00"), FRAME_SIZE_ERROR),  # 5 bytes: not a multiple of 6
    (frame(SETTINGS, 1, 0, bytes(6)), FRAME_SIZE_ERROR),  # an ACK with a payload
    (frame(SETTINGS, 0, 0, struct.pack(">HL", 2, 2)), PROTOCOL_ERROR),  # ENABLE_PUSH neither 0 nor 1
    (frame(SETTINGS, 0, 0, struct.pack(">HL", 4, 2**31)), FLOW_CONTROL_ERROR),  # INITIAL_WINDOW_SIZE > 2^31-1
    (frame(SETTINGS, 0, 0, struct.pack(">HL", 5, 100)), PROTOCOL_ERROR),  # MAX_FRAME_SIZE under 16384
    (frame(SETTINGS, 0, 0, struct.pack(">HL", 5, 2**24)), PROTOCOL_ERROR),  # and over 2^24-1
    (frame(WINDOW_UPDATE, 0, 0, bytes(4)), PROTOCOL_ERROR),  # increment 0 on the connection
    (frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 2**31 - 1)), FLOW_CONTROL_ERROR),  # window past 2^31-1
    (frame(WINDOW_UPDATE, 0, 0, bytes(3)), FRAME_SIZE_ERROR),
    (frame(PING, 0, 0, bytes(7)), FRAME_SIZE_ERROR),  # a PING of 7 bytes
)


def assert_broken_frames_end_the_connection(address: str) -> None:
    """Each of `BROKEN_FRAMES`, on a connection of its own, gets GOAWAY with its code, then a close."""
    for sent, code in BROKEN_FRAMES:
        answer = exchange(address, sent)
        assert answer.goaway() == code, (sent, answer.frames)
        assert answer.closed


def assert_floods_calmed(address: str, pid: int, path: str) -> None:
    """A PING flood never read, then streams opened and reset at once ("rapid reset"), each end in
    GOAWAY ENHANCE_YOUR_CALM and a close, the server at ``pid`` growing by less than 32 MiB."""
    before = rss(pid)
    sent, answer = ping_flood(address)
    assert answer.goaway() == ENHANCE_YOUR_CALM, f"{sent} PINGs sent; {answer.count(PING)} answered"
    assert answer.closed
    sent, answer = rapid_reset(address, path)
    assert answer.goaway() == ENHANCE_YOUR_CALM, f"{sent} streams opened and reset"
    assert answer.closed
    assert rss(pid) - before < 32 * MIB


def assert_unread_pings_stall(address: str, pid: int) -> None:
    """Without the flood budget, PINGs never read cost the server only its write buffer's high-water
    mark: it stops reading the peer until the answers drain, so the flood stalls."""
    before = rss(pid)
    sent, _ = ping_flood(address, count=2_000_000, seconds=4.0, wait=0.2)
    assert sent < 1_000_000, f"all {sent} PINGs were read"
    assert rss(pid) - before < 32 * MIB


def stream_asking_never_reading(
    address: str, path: str, message: bytes, count: int, seconds: float = 4.0
) -> tuple[int, int]:
    """One stream of ``path`` carrying ``count`` copies of the gRPC ``message`` (sent as the server's
    window allows), the server's answers read off the socket but never granted window: (messages
    sent, bytes of DATA received)."""
    framed = b"\x00" + len(message).to_bytes(4, "big") + message
    sent = received = 0
    with grpc_stream(address, path) as (sock, connection):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            while sent < count and connection.local_flow_control_window(1) >= len(framed):
                connection.send_data(1, framed)
                sent += 1
            sock.sendall(connection.data_to_send())
            sock.settimeout(0.05)
            try:
                data = sock.recv(1 << 16)
            except TimeoutError:
                continue
            if not data:
                break
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    received += event.flow_controlled_length  # never acknowledged: no window given
            sock.sendall(connection.data_to_send())
    return sent, received
