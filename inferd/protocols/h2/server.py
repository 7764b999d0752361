"""The server side of inferd's HTTP/2 (`inferd.protocols.h2.connection`): a client's connection to a
server of ours (the native gRPC server, the gateway's gRPC side), its calls by stream, the streams
it may open, and GOAWAY once the server stops taking calls."""

from __future__ import annotations

from struct import pack
from typing import Generic, Protocol, TypeVar

from inferd.protocols.h2.connection import FLOOD_LIMIT, MAX_STREAMS, H2Connection
from inferd.protocols.h2.frames import (
    GOAWAY,
    NO_ERROR,
    PROTOCOL_ERROR,
    REFUSED_STREAM,
    ProtocolViolation,
    frame,
)
from inferd.protocols.h2.sending import Corker


class StreamCall(Protocol):
    """What a server's call does with its stream's DATA and its reset."""

    def request_data(self, data: memoryview, flow: int, end: bool) -> None: ...
    def cancel(self) -> None: ...


C = TypeVar("C", bound=StreamCall)


class ServerConnection(H2Connection, Generic[C]):
    """A client's connection to a server of ours: its calls by stream, each new stream checked
    (`opens`), and GOAWAY once the server stops taking calls (`stop_taking`)."""

    server_side = True

    def __init__(self, corker: Corker, flood_limit: int = FLOOD_LIMIT) -> None:
        super().__init__(corker, flood_limit)
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
            self.flooded()  # a client that opens streams past the limit, again and again
            self.reset(stream, REFUSED_STREAM)
            return False
        return True

    def last_taken(self) -> int:
        return self.last_stream

    def is_idle(self, stream: int) -> bool:
        return stream > self.last_stream or not stream & 1  # we push nothing: even streams never open

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
