"""The sending half of an HTTP/2 connection (`inferd.protocols.h2.connection.H2Connection`): each
stream's queue (`Outbound`) and the peer's windows, what was received credited back to its sender
(`Inbound`), and writes joined per iteration of the event loop (`Corker`). Apart from the reading
half so that each stays a module one can read through.
"""

from __future__ import annotations

import asyncio
from collections import deque
from struct import pack

from inferd.protocols.h2.frames import (
    CONTINUATION,
    DATA,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    MAX_FRAME,
    RST_STREAM,
    WINDOW_UPDATE,
    Payload,
    frame,
    frame_header,
)
from inferd.protocols.h2.hpack_out import TABLE_SIZE_ZERO

#: What each side may send on one stream before the relay passes it on, and on one connection.
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 23
#: DATA payloads this long or longer are written by reference (`Sender.write_data`), not copied.
BY_REFERENCE = 4096
#: Seconds a connection closed by us has to read what we sent last and close its side, before it
#: is cut (`Sender.close`).
CLOSE_GRACE = 2.0


class Corker:
    """The connections written to in this iteration of the event loop, flushed at its end."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.dirty: list[Sender] = []

    def add(self, connection: Sender) -> None:
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

    def __init__(self, connection: Sender, stream: int) -> None:
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

    def waiting(self) -> int:
        """Bytes of DATA waiting for the peer's window (a peer that stops reading keeps them here)."""
        return sum(memoryview(data).nbytes for data, _, _, _ in self.pending)


class Sender:
    """What a connection sends: frames written (`write`), streams' DATA within the windows."""

    def __init__(self, corker: Corker) -> None:
        self.corker = corker
        self.transport: asyncio.Transport | None = None
        self.out: list[Payload] = []
        #: Whether `out` holds a payload written by reference (`write_data`).
        self.by_reference = False
        #: More than the write buffer's high-water mark waits to be sent: DATA waits for it.
        self.write_paused = False
        self.peer_window = DEFAULT_WINDOW
        self.peer_max_frame = MAX_FRAME
        self.send_window = DEFAULT_WINDOW
        self.receive_window = CONNECTION_WINDOW
        self.unacked = 0
        self.outbound: dict[int, Outbound] = {}
        self.blocked: dict[int, Outbound] = {}
        self.size_update = True
        self.closed = False

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
            and not self.write_paused
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
                if size > allowed or self.write_paused:
                    if allowed <= 0 or self.write_paused:
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
            if self.send_window <= 0 or self.write_paused:
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
        """Close once what was written is sent: a lingering close (nginx's), which ends our side
        (FIN after the last frame) and reads and drops what the peer still sends until it closes
        its side, at most `CLOSE_GRACE` seconds. Closing at once while its frames wait unread
        would reset the connection, and the reset drops our last frames (the GOAWAY saying why)."""
        self.flush()
        transport = self.transport
        if transport is not None and not self.closed and not transport.is_closing():
            if transport.can_write_eof():
                transport.write_eof()
                transport.resume_reading()
            else:
                transport.close()
            self.corker.loop.call_later(CLOSE_GRACE, transport.abort)
        self.closed = True

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
