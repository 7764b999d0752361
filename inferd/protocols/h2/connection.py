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

What a peer can make a connection hold is bounded: while more than `WRITE_HIGH_WATER` bytes wait
to be sent (a peer that does not read), the connection neither reads from it nor sends it DATA
(`pause_writing`), so neither PING answers nor relayed answers pile up, and the sender of those
answers is not credited; frames that cost work and carry no request are held to a `FloodBudget`;
every frame's header, SETTINGS value and window change is checked as RFC 9113 says (`frames`).
The server side (its calls by stream) is `inferd.protocols.h2.server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from struct import pack, unpack_from
from typing import ClassVar, cast

import hpack

from inferd.protocols.h2.flood import FloodBudget
from inferd.protocols.h2.frames import (
    ACK,
    COMPRESSION_ERROR,
    CONTINUATION,
    DATA,
    DEFAULT_WINDOW,
    ENABLE_PUSH,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADER_TABLE_SIZE,
    HEADERS,
    INITIAL_WINDOW_SIZE,
    LAST_STREAM_ID,
    MAX_CONCURRENT_STREAMS,
    MAX_FRAME_SIZE,
    MAX_WINDOW,
    PING,
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    ProtocolViolation,
    check_frame,
    frame,
    received_settings,
    unpadded,
)
from inferd.protocols.h2.hpack_out import Header
from inferd.protocols.h2.sending import CONNECTION_WINDOW, STREAM_WINDOW, Corker, Sender

#: Streams a client may have open on one connection.
MAX_STREAMS = 1000
MAX_HEADER_LIST = 64 * 1024
#: Header blocks kept decoded per connection (`H2Connection.decode`).
DECODED_BLOCKS = 64
#: Bytes written and not yet sent past which the connection stops reading its peer (and sending
#: DATA) until they drain: a peer that does not read cannot make us buffer more (`pause_writing`).
WRITE_HIGH_WATER = 1 << 20
#: The flood budget's default (`inferd.protocols.h2.flood`): cheap frames a peer may send per second.
FLOOD_LIMIT = 1000


class H2Connection(Sender, asyncio.Protocol):
    """One HTTP/2 connection; subclasses say what its streams mean."""

    #: True: the peer is a client (expect its preface); False: we are the client (send ours).
    server_side: ClassVar[bool]

    def __init__(self, corker: Corker, flood_limit: int = FLOOD_LIMIT) -> None:
        super().__init__(corker)
        self.flood = FloodBudget(flood_limit)
        self.buffer = bytearray()
        self.decoder = hpack.Decoder(max_header_list_size=MAX_HEADER_LIST)
        self.decoded: dict[bytes, list[Header]] = {}
        self.peer_max_streams = LAST_STREAM_ID
        self.receive_window = CONNECTION_WINDOW
        self.continuing: tuple[int, bool, bytearray] | None = None
        self.preface = self.server_side

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        settings = pack(">HLHL", MAX_CONCURRENT_STREAMS, MAX_STREAMS, INITIAL_WINDOW_SIZE, STREAM_WINDOW)
        if not self.server_side:
            settings += pack(">HL", ENABLE_PUSH, 0)  # no server push
        self.write(
            (b"" if self.server_side else PREFACE)
            + frame(SETTINGS, 0, 0, settings)
            + frame(WINDOW_UPDATE, 0, 0, pack(">L", CONNECTION_WINDOW - DEFAULT_WINDOW))
        )

    def data_received(self, data: bytes) -> None:
        if self.closed:  # closing (`close`): what the peer still sends is dropped
            return
        received = memoryview(data)
        try:
            view = self.read_preface(received) if self.preface else received
            if view is not None and self.buffer:
                view = self.complete_frame(view)
            if view is None:
                return
            position = self.read_frames(view)
        except ProtocolViolation as violation:
            self.go_away(violation.code, self.last_taken())
            return
        except struct.error:  # a frame shorter than its type's fields
            self.go_away(FRAME_SIZE_ERROR, self.last_taken())
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
        check_frame(buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & LAST_STREAM_ID, length)
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
            stream &= LAST_STREAM_ID
            check_frame(kind, flags, stream, length)  # from the header alone, before the payload is there
            if end - position - 9 < length:
                break
            start, position = position + 9, position + 9 + length
            if kind == DATA:
                self.data_frame(flags, stream, view[start:position])
            else:
                self.frame_received(kind, flags, stream, bytes(view[start:position]))
        return position

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.out.clear()
        self.on_lost()

    def pause_writing(self) -> None:
        """Our writes outgrew `WRITE_HIGH_WATER`: stop sending DATA (it waits on its stream, its
        source not credited) and, when the peer is a client, reading it (what it sends would be
        answered). The gateway keeps reading its services, which are its own: were both ends of
        that connection to stop reading while their writes wait, neither would drain."""
        self.write_paused = True
        if self.server_side and self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.transport is not None and not self.closed:
            if self.server_side:
                self.transport.resume_reading()
            self.unblock()

    def flooded(self) -> None:
        """The peer sent a frame that costs work and carries no request: past the budget, the
        connection ends (GOAWAY ENHANCE_YOUR_CALM)."""
        if not self.flood.spend():
            raise ProtocolViolation(ENHANCE_YOUR_CALM)

    def last_taken(self) -> int:
        """The last stream the peer opened that we took (a GOAWAY names it): none here."""
        return 0

    def is_idle(self, stream: int) -> bool:
        """Whether ``stream`` was never opened (a RST_STREAM for it is a protocol error)."""
        return False

    # Frames in
    def data_frame(self, flags: int, stream: int, payload: memoryview) -> None:
        if self.continuing is not None:
            raise ProtocolViolation(PROTOCOL_ERROR)
        data = unpadded(payload, flags)
        if self.is_idle(stream):  # RFC 9113 5.1: only HEADERS and PRIORITY may name an idle stream
            raise ProtocolViolation(PROTOCOL_ERROR)
        flow = len(payload)
        if not flow and not flags & END_STREAM:
            self.flooded()
        self.receive_window -= flow
        if self.receive_window < 0:
            raise ProtocolViolation(FLOW_CONTROL_ERROR)
        self.on_data(stream, data, flow, bool(flags & END_STREAM))

    def frame_received(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if self.continuing is not None and kind != CONTINUATION:
            raise ProtocolViolation(PROTOCOL_ERROR)
        if kind == HEADERS:
            block = unpadded(payload, flags)
            if flags & PRIORITY_FLAG:
                block = block[5:]
            if not block and not flags & (END_HEADERS | END_STREAM):
                self.flooded()
            if flags & END_HEADERS:
                self.headers_complete(stream, block, bool(flags & END_STREAM))
            else:
                self.continuing = (stream, bool(flags & END_STREAM), bytearray(block))
        elif kind == CONTINUATION:
            if self.continuing is None or self.continuing[0] != stream:
                raise ProtocolViolation(PROTOCOL_ERROR)
            if not payload and not flags & END_HEADERS:
                self.flooded()
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
                self.flooded()
                self.settings(payload)
        elif kind == PING:
            if not flags & ACK:
                self.flooded()
                self.write(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            if self.is_idle(stream):
                raise ProtocolViolation(PROTOCOL_ERROR)
            self.flooded()
            self.drop(stream)
            self.on_reset(stream, unpack_from(">L", payload)[0])
        elif kind == PRIORITY:
            self.flooded()
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
        for key, value in received_settings(payload):
            if key == HEADER_TABLE_SIZE:
                self.size_update = True
            elif key == MAX_CONCURRENT_STREAMS:
                self.peer_max_streams = value
            elif key == INITIAL_WINDOW_SIZE:
                delta, self.peer_window = value - self.peer_window, value
                for outbound in self.outbound.values():
                    outbound.window += delta
                    if outbound.window > MAX_WINDOW:  # RFC 9113 6.9.2
                        raise ProtocolViolation(FLOW_CONTROL_ERROR)
                opened = delta > 0
            elif key == MAX_FRAME_SIZE:
                self.peer_max_frame = value
        self.write(frame(SETTINGS, ACK, 0))
        if opened:
            self.unblock()

    def window_update(self, stream: int, increment: int) -> None:
        """RFC 9113 6.9: an increment of 0 is a protocol error, a window past 2^31-1 a flow-control
        error; of the connection's window (stream 0) the connection's, else the stream's."""
        if stream == 0:
            self.send_window += increment
            if not increment:
                raise ProtocolViolation(PROTOCOL_ERROR)
            if self.send_window > MAX_WINDOW:
                raise ProtocolViolation(FLOW_CONTROL_ERROR)
            self.unblock()
            return
        if self.is_idle(stream):
            raise ProtocolViolation(PROTOCOL_ERROR)
        if not increment:
            self.stream_error(stream, PROTOCOL_ERROR)
            return
        outbound = self.outbound.get(stream)
        if outbound is not None:
            outbound.window += increment
            if outbound.window > MAX_WINDOW:
                self.stream_error(stream, FLOW_CONTROL_ERROR)
            elif outbound.pending:
                self.push(outbound)

    def stream_error(self, stream: int, code: int) -> None:
        """The peer broke HTTP/2 on ``stream`` alone: RST_STREAM ``code``, and its call ends."""
        self.reset(stream, code)
        self.on_reset(stream, code)

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
