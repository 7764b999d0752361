"""The HTTP/2 framing inferd's gRPC needs (RFC 9113), as an asyncio protocol: either side of the
gateway's relay (`inferd.platform.gateway.grpc_relay`), and the server side of the native gRPC server
(`inferd.server.grpc_native`).

`H2Connection` reads frames, answers SETTINGS and PING, keeps both flow-control windows, and hands
each stream's header blocks (decoded by hpack) and DATA payloads to its subclass (`on_headers`,
`on_data`, `on_reset`, `on_goaway`, `on_lost`). What a stream sends goes out through its `Outbound`:
DATA waits there while the peer's windows are closed, and HEADERS queued behind it keep their order.

Flow control pushes back end to end: received DATA is credited to its sender (WINDOW_UPDATE, in
batches of half a window) only once the relay has written it on to the other side (`Inbound.credit`),
so a slow reader on one side slows the writer on the other instead of filling memory.

Writes made while one batch of events is handled are joined and sent once at the end of the event
loop's iteration (`Corker`): a relayed call costs one system call per connection, not one per frame.

Large payloads are not copied on either side: frames are read in place from the bytes the socket
gave (a DATA payload reaches `on_data` as a view of them; only a frame split between two reads is
put together first), and a DATA payload of `BY_REFERENCE` bytes or more is handed to the transport
as it is, beside its frame header, not joined with the other writes (`write_data`, `flush`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections import deque
from struct import pack, unpack_from
from typing import ClassVar, Generic, Protocol, TypeVar, cast

import hpack

from inferd.protocols.h2.hpack_out import TABLE_SIZE_ZERO, Header

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    range(10)
)
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 6, 7, 8, 9
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DEFAULT_WINDOW = 65535
#: What each side may send on one stream before the relay passes it on, and on one connection.
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 23
#: Streams a client may have open on one connection.
MAX_STREAMS = 1000
MAX_FRAME = 16384
MAX_HEADER_LIST = 64 * 1024
LAST_STREAM_ID = (1 << 31) - 1
#: Header blocks kept decoded per connection (`H2Connection.decode`).
DECODED_BLOCKS = 64
#: DATA payloads this long or longer are written by reference (`H2Connection.write_data`), not copied.
BY_REFERENCE = 4096

Payload = bytes | memoryview


class ProtocolViolation(Exception):
    """The peer broke HTTP/2: the connection ends with GOAWAY ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def frame(kind: int, flags: int, stream: int, payload: Payload = b"") -> bytes:
    return frame_header(kind, flags, stream, len(payload)) + payload


def frame_header(kind: int, flags: int, stream: int, length: int) -> bytes:
    return pack(">BHBBL", length >> 16, length & 0xFFFF, kind, flags, stream)


class Corker:
    """The connections written to in this iteration of the event loop, flushed at its end."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.dirty: list[H2Connection] = []

    def add(self, connection: H2Connection) -> None:
        if not self.dirty:
            self.loop.call_soon(self.flush)
        self.dirty.append(connection)

    def flush(self) -> None:
        dirty, self.dirty = self.dirty, []
        for connection in dirty:
            connection.flush()


class Inbound:
    """What one stream received and has not credited back to its sender yet."""

    __slots__ = ("connection", "ended", "stream", "unacked")

    def __init__(self, connection: H2Connection, stream: int) -> None:
        self.connection, self.stream = connection, stream
        self.unacked = 0
        self.ended = False

    def credit(self, size: int) -> None:
        """``size`` bytes of this stream were passed on: the sender may send as many again."""
        connection = self.connection
        if connection.closed:
            return
        connection.credit(size)
        if not self.ended:
            self.unacked += size
            if self.unacked >= STREAM_WINDOW // 2:
                connection.write(frame(WINDOW_UPDATE, 0, self.stream, pack(">L", self.unacked)))
                self.unacked = 0


#: A queued item: a DATA payload (or a header block: ``flow`` -1), whether it ends the stream, and
#: whom to credit with ``flow`` bytes once it is written.
Item = tuple[Payload, bool, Inbound | None, int]


class Outbound:
    """One stream's sending side: the peer's window for it, and what waits for the window."""

    __slots__ = ("pending", "stream", "window")

    def __init__(self, stream: int, window: int) -> None:
        self.stream, self.window = stream, window
        self.pending: deque[Item] = deque()


class H2Connection(asyncio.Protocol):
    """One HTTP/2 connection; subclasses say what its streams mean."""

    #: True: the peer is a client (expect its preface); False: we are the client (send ours).
    server_side: ClassVar[bool]

    def __init__(self, corker: Corker) -> None:
        self.corker = corker
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.out: list[Payload] = []
        #: Whether `out` holds a payload written by reference (`write_data`).
        self.by_reference = False
        self.decoder = hpack.Decoder(max_header_list_size=MAX_HEADER_LIST)
        self.decoded: dict[bytes, list[Header]] = {}
        self.peer_window = DEFAULT_WINDOW
        self.peer_max_frame = MAX_FRAME
        self.peer_max_streams = LAST_STREAM_ID
        self.send_window = DEFAULT_WINDOW
        self.receive_window = CONNECTION_WINDOW
        self.unacked = 0
        self.outbound: dict[int, Outbound] = {}
        self.blocked: dict[int, Outbound] = {}
        self.continuing: tuple[int, bool, bytearray] | None = None
        self.size_update = True
        self.preface = self.server_side
        self.closed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        settings = pack(">HLHL", 3, MAX_STREAMS, 4, STREAM_WINDOW)
        if not self.server_side:
            settings += pack(">HL", 2, 0)  # no server push
        self.write(
            (b"" if self.server_side else PREFACE)
            + frame(SETTINGS, 0, 0, settings)
            + frame(WINDOW_UPDATE, 0, 0, pack(">L", CONNECTION_WINDOW - DEFAULT_WINDOW))
        )

    def data_received(self, data: bytes) -> None:
        received = memoryview(data)
        try:
            view = self.read_preface(received) if self.preface else received
            if view is not None and self.buffer:
                view = self.complete_frame(view)
            if view is None:
                return
            position = self.read_frames(view)
        except ProtocolViolation as violation:
            self.go_away(violation.code)
            return
        except struct.error:  # a frame shorter than its type's fields
            self.go_away(FRAME_SIZE_ERROR)
            return
        if position < len(view) and not self.closed:
            self.buffer += view[position:]

    def read_preface(self, view: memoryview) -> memoryview | None:
        """What follows the client's preface in ``view``; None: the preface is not complete yet (or
        is wrong: the connection is aborted)."""
        buffer = self.buffer
        needed = len(PREFACE) - len(buffer)
        buffer += view[:needed]
        if not PREFACE.startswith(buffer):
            self.abort()
            return None
        if len(buffer) < len(PREFACE):
            return None
        buffer.clear()
        self.preface = False
        return view[needed:]

    def complete_frame(self, view: memoryview) -> memoryview | None:
        """Complete the frame begun in `buffer` from ``view`` and read it; what follows it in
        ``view``, or None while the frame is still incomplete."""
        buffer = self.buffer
        if len(buffer) < 9:
            needed = 9 - len(buffer)
            buffer += view[:needed]
            view = view[needed:]
            if len(buffer) < 9:
                return None
        length = int.from_bytes(buffer[:3], "big")
        if length > MAX_FRAME:
            raise ProtocolViolation(FRAME_SIZE_ERROR)
        needed = 9 + length - len(buffer)
        buffer += view[:needed]
        if len(buffer) < 9 + length:
            return None
        whole = bytes(buffer)
        buffer.clear()
        self.read_frames(memoryview(whole))
        return view[needed:]

    def read_frames(self, view: memoryview) -> int:
        """Read the whole frames at the start of ``view``; how many bytes they took. A DATA payload
        is passed on as a view of ``view`` (its receiver copies what it keeps), others as bytes."""
        position, end = 0, len(view)
        while end - position >= 9 and not self.closed:
            high, low, kind, flags, stream = unpack_from(">BHBBL", view, position)
            length = high << 16 | low
            if length > MAX_FRAME:
                raise ProtocolViolation(FRAME_SIZE_ERROR)
            if end - position - 9 < length:
                break
            start, position = position + 9, position + 9 + length
            if kind == DATA:
                self.data_frame(flags, stream & LAST_STREAM_ID, view[start:position])
            else:
                self.frame_received(kind, flags, stream & LAST_STREAM_ID, bytes(view[start:position]))
        return position

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.out.clear()
        self.on_lost()

    # Frames in
    def data_frame(self, flags: int, stream: int, payload: memoryview) -> None:
        if self.continuing is not None:
            raise ProtocolViolation(PROTOCOL_ERROR)
        flow = len(payload)
        self.receive_window -= flow
        if self.receive_window < 0:
            raise ProtocolViolation(FLOW_CONTROL_ERROR)
        self.on_data(stream, unpadded(payload, flags), flow, bool(flags & END_STREAM))

    def frame_received(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if self.continuing is not None and kind != CONTINUATION:
            raise ProtocolViolation(PROTOCOL_ERROR)
        if kind == HEADERS:
            block = unpadded(payload, flags)
            if flags & PRIORITY_FLAG:
                block = block[5:]
            if flags & END_HEADERS:
                self.headers_complete(stream, block, bool(flags & END_STREAM))
            else:
                self.continuing = (stream, bool(flags & END_STREAM), bytearray(block))
        elif kind == CONTINUATION:
            if self.continuing is None or self.continuing[0] != stream:
                raise ProtocolViolation(PROTOCOL_ERROR)
            self.continuing[2].extend(payload)
            if len(self.continuing[2]) > MAX_HEADER_LIST:
                raise ProtocolViolation(PROTOCOL_ERROR)
            if flags & END_HEADERS:
                _, end, block_ = self.continuing
                self.continuing = None
                self.headers_complete(stream, bytes(block_), end)
        elif kind == WINDOW_UPDATE:
            self.window_update(stream, unpack_from(">L", payload)[0] & LAST_STREAM_ID)
        elif kind == SETTINGS:
            if not flags & ACK:
                self.settings(payload)
        elif kind == PING:
            if not flags & ACK:
                self.write(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            self.drop(stream)
            self.on_reset(stream, unpack_from(">L", payload)[0])
        elif kind == GOAWAY:
            last, code = unpack_from(">LL", payload)
            self.on_goaway(last & LAST_STREAM_ID, code)
        elif kind == PUSH_PROMISE:
            raise ProtocolViolation(PROTOCOL_ERROR)  # refused in our SETTINGS

    def headers_complete(self, stream: int, block: bytes, end: bool) -> None:
        headers = self.decoded.get(block)
        if headers is None:
            headers = self.decode(block)
        self.on_headers(stream, headers, end)

    def decode(self, block: bytes) -> list[Header]:
        """``block`` decoded, and kept while the decoder's dynamic table stays as it is: peers send
        the same bytes for the same headers call after call (indexed fields), and a block that
        leaves the table unchanged decodes the same way until the table changes."""
        table = self.decoder.header_table
        entries = table.dynamic_entries
        before = (len(entries), entries[0] if entries else None, table.maxsize)
        try:
            headers = cast(list[Header], self.decoder.decode(block, raw=True))
        except hpack.HPACKError:
            raise ProtocolViolation(COMPRESSION_ERROR) from None
        after = (len(entries), entries[0] if entries else None, table.maxsize)
        decoded = self.decoded
        if after[0] != before[0] or after[1] is not before[1] or after[2] != before[2]:
            decoded.clear()
        else:
            if len(decoded) >= DECODED_BLOCKS:
                decoded.clear()
            decoded[block] = headers
        return headers

    def settings(self, payload: bytes) -> None:
        opened = False
        for offset in range(0, len(payload) - 5, 6):
            key, value = unpack_from(">HL", payload, offset)
            if key == 1:
                self.size_update = True
            elif key == 3:
                self.peer_max_streams = value
            elif key == 4:
                delta, self.peer_window = value - self.peer_window, value
                for outbound in self.outbound.values():
                    outbound.window += delta
                opened = delta > 0
            elif key == 5:
                self.peer_max_frame = value
        self.write(frame(SETTINGS, ACK, 0))
        if opened:
            self.unblock()

    def window_update(self, stream: int, increment: int) -> None:
        if stream == 0:
            self.send_window += increment
            self.unblock()
            return
        outbound = self.outbound.get(stream)
        if outbound is not None:
            outbound.window += increment
            if outbound.pending:
                self.push(outbound)

    def credit(self, size: int) -> None:
        """``size`` bytes received on this connection were passed on."""
        self.unacked += size
        if self.unacked >= CONNECTION_WINDOW // 2:
            self.write(frame(WINDOW_UPDATE, 0, 0, pack(">L", self.unacked)))
            self.receive_window += self.unacked
            self.unacked = 0

    # Frames out
    def open_outbound(self, stream: int) -> Outbound:
        outbound = self.outbound[stream] = Outbound(stream, self.peer_window)
        return outbound

    def send_headers(self, outbound: Outbound, block: bytes, end: bool) -> None:
        if outbound.pending:
            outbound.pending.append((block, end, None, -1))
            return
        self.write_headers(outbound.stream, block, end)
        if end:
            self.outbound.pop(outbound.stream, None)

    def write_headers(self, stream: int, block: bytes, end: bool) -> None:
        if self.size_update:
            block, self.size_update = TABLE_SIZE_ZERO + block, False
        flags = END_STREAM if end else 0
        size = self.peer_max_frame
        if len(block) <= size:
            self.write(frame(HEADERS, flags | END_HEADERS, stream, block))
            return
        self.write(frame(HEADERS, flags, stream, block[:size]))
        for start in range(size, len(block), size):
            last = start + size >= len(block)
            self.write(frame(CONTINUATION, END_HEADERS if last else 0, stream, block[start : start + size]))

    def send_data(
        self, outbound: Outbound, data: Payload, end: bool, source: Inbound | None, flow: int
    ) -> None:
        """Send ``data`` on ``outbound``'s stream as the windows allow; ``source`` is credited with
        ``flow`` bytes once all of it is written. A large ``data`` is sent from its own memory,
        which must not change until it is written."""
        size = len(data)
        if (
            not outbound.pending
            and size <= outbound.window
            and size <= self.send_window
            and size <= self.peer_max_frame
        ):
            outbound.window -= size
            self.send_window -= size
            self.write_data(outbound.stream, END_STREAM if end else 0, data)
            if source is not None:
                source.credit(flow)
            if end:
                self.outbound.pop(outbound.stream, None)
            return
        outbound.pending.append((data, end, source, flow))
        self.push(outbound)

    def push(self, outbound: Outbound) -> None:
        """Send what waits on ``outbound`` as far as the windows allow."""
        pending, stream = outbound.pending, outbound.stream
        while pending:
            data, end, source, flow = pending[0]
            if flow < 0:
                pending.popleft()
                self.write_headers(stream, bytes(data), end)
            else:
                allowed = min(outbound.window, self.send_window, self.peer_max_frame)
                size = len(data)
                if size > allowed:
                    if allowed <= 0:
                        self.blocked[stream] = outbound
                        return
                    view = memoryview(data)  # the rest waits as a view, not a copy
                    self.write_data(stream, 0, view[:allowed])
                    outbound.window -= allowed
                    self.send_window -= allowed
                    pending[0] = (view[allowed:], end, source, flow)
                    continue
                pending.popleft()
                self.write_data(stream, END_STREAM if end else 0, data)
                outbound.window -= size
                self.send_window -= size
                if source is not None:
                    source.credit(flow)
            if end:
                self.outbound.pop(stream, None)
        self.blocked.pop(stream, None)

    def unblock(self) -> None:
        for outbound in list(self.blocked.values()):
            if self.send_window <= 0:
                return
            self.push(outbound)

    def reset(self, stream: int, code: int) -> None:
        """End ``stream`` with RST_STREAM ``code``, dropping what it had queued."""
        if not self.closed:
            self.write(frame(RST_STREAM, 0, stream, pack(">L", code)))
        self.drop(stream)

    def drop(self, stream: int) -> None:
        """Forget ``stream``'s queue, crediting its senders (their connection windows)."""
        outbound = self.outbound.pop(stream, None)
        self.blocked.pop(stream, None)
        if outbound is not None:
            for _, _, source, flow in outbound.pending:
                if source is not None:
                    source.credit(flow)

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if not self.out:
            self.corker.add(self)
        self.out.append(data)

    def write_data(self, stream: int, flags: int, data: Payload) -> None:
        """A DATA frame; a payload of `BY_REFERENCE` bytes or more is written by reference."""
        if len(data) < BY_REFERENCE:
            self.write(frame(DATA, flags, stream, data))
            return
        self.write(frame_header(DATA, flags, stream, len(data)))
        if not self.closed:
            self.out.append(data)
            self.by_reference = True

    def flush(self) -> None:
        """Send what was written: joined into one write, or (when payloads were written by
        reference) handed over as a list, which uvloop writes with one ``writev`` and keeps by
        reference while the socket is full (asyncio's own loop joins it)."""
        out, self.out = self.out, []
        by_reference, self.by_reference = self.by_reference, False
        if out and self.transport is not None and not self.closed:
            if by_reference:
                self.transport.writelines(out)
            else:
                self.transport.write(b"".join(out))

    def go_away(self, code: int, last_stream: int = 0) -> None:
        """Tell the peer the connection ends (``code``), and close it."""
        self.write(frame(GOAWAY, 0, 0, pack(">LL", last_stream, code)))
        self.close()

    def close(self) -> None:
        """Close once what was written is sent."""
        self.flush()
        if self.transport is not None:
            self.transport.close()
        self.closed = True

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # What subclasses do with streams
    def on_headers(self, stream: int, headers: list[Header], end: bool) -> None:
        raise NotImplementedError

    def on_data(self, stream: int, data: memoryview, flow: int, end: bool) -> None:
        """``data``: a view of the bytes read (copy what is kept: it holds all of them alive)."""
        raise NotImplementedError

    def on_reset(self, stream: int, code: int) -> None:
        raise NotImplementedError

    def on_goaway(self, last_stream: int, code: int) -> None:
        raise NotImplementedError

    def on_lost(self) -> None:
        raise NotImplementedError


class StreamCall(Protocol):
    """What a server's call does with its stream's DATA and its reset."""

    def request_data(self, data: memoryview, flow: int, end: bool) -> None: ...
    def cancel(self) -> None: ...


C = TypeVar("C", bound=StreamCall)
P = TypeVar("P", bytes, memoryview)


class ServerConnection(H2Connection, Generic[C]):
    """A client's connection to a server of ours: its calls by stream, each new stream checked
    (`opens`), and GOAWAY once the server stops taking calls (`stop_taking`)."""

    server_side = True

    def __init__(self, corker: Corker) -> None:
        super().__init__(corker)
        self.calls: dict[int, C] = {}
        self.last_stream = 0
        self.going_away = False

    def opens(self, stream: int) -> bool:
        """Whether the client may open ``stream`` now; a stream past the limit or after GOAWAY is
        refused (RST_STREAM REFUSED_STREAM: the client may retry it elsewhere)."""
        if stream <= self.last_stream or not stream & 1:
            raise ProtocolViolation(PROTOCOL_ERROR)
        self.last_stream = stream
        if self.going_away or len(self.calls) >= MAX_STREAMS:
            self.reset(stream, REFUSED_STREAM)
            return False
        return True

    def on_data(self, stream: int, data: memoryview, flow: int, end: bool) -> None:
        call = self.calls.get(stream)
        if call is None:
            self.credit(flow)  # a stream already answered or reset
        else:
            call.request_data(data, flow, end)

    def on_reset(self, stream: int, code: int) -> None:
        call = self.calls.get(stream)
        if call is not None:
            call.cancel()

    def on_goaway(self, last_stream: int, code: int) -> None:
        pass  # a client going away still gets the answers of its calls

    def on_lost(self) -> None:
        for call in list(self.calls.values()):
            call.cancel()

    def call_over(self, stream: int) -> None:
        self.calls.pop(stream, None)
        if self.going_away and not self.calls:
            self.close()

    def stop_taking(self) -> None:
        """GOAWAY: no new calls; the connection closes once its calls are over."""
        self.going_away = True
        self.write(frame(GOAWAY, 0, 0, pack(">LL", self.last_stream, NO_ERROR)))
        if not self.calls:
            self.close()


def unpadded(payload: P, flags: int) -> P:
    if not flags & PADDED:
        return payload
    if not payload or payload[0] >= len(payload):
        raise ProtocolViolation(PROTOCOL_ERROR)
    return payload[1 : len(payload) - payload[0]]
