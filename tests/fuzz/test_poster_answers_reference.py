"""How the payload log's client (`inferd.protocols.poster`) reads a sink's pipelined answers, against
h11 reading the same bytes one answer after the other.

A run of answers framed by h11 (statuses, 1xx first, Content-Length, chunked, the last one maybe
framed by the connection's end or saying ``Connection: close``) is fed in random pieces to one
connection with that many requests in flight. Each request h11 reads a whole answer for must be
reported answered with that status, in order; the others failed or queued again, never answered.
Mutated bytes: what h11 refuses is never reported answered beyond the answers h11 read before it.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.protocols.poster import Poster, _Connection
from tests.fuzz.conftest import EXAMPLES
from tests.fuzz.test_upstream_answers_reference import LENIENT

MANY = settings(max_examples=EXAMPLES * 5)
REQUEST = h11.Request(method="POST", target="/", headers=[("host", "sink"), ("content-length", "0")])


class Transport(asyncio.Transport):
    """The socket's stand-in."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def write(self, data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def abort(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True


@dataclass
class Run:
    data: bytes
    count: int  # requests in flight
    closes: bool
    cuts: list[int]


def h11_statuses(data: bytes, count: int, closes: bool) -> list[int]:
    """The statuses of the whole answers h11 reads, in order, until it needs more, refuses or the
    connection may not be used again."""
    client = h11.Connection(h11.CLIENT)
    client.receive_data(data)
    if closes:
        client.receive_data(b"")
    statuses: list[int] = []
    for _ in range(count):
        client.send(REQUEST)
        client.send(h11.EndOfMessage())
        status = 0
        try:
            while True:
                event = client.next_event()
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.EndOfMessage):
                    statuses.append(status)
                    break
                elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                    return statuses
        except h11.RemoteProtocolError:
            return statuses
        if client.our_state is not h11.DONE or client.their_state is not h11.DONE:
            return statuses  # MUST_CLOSE: nothing more is read on this connection
        client.start_next_cycle()
    return statuses


def poster_statuses(data: bytes, count: int, closes: bool, cuts: list[int]) -> tuple[list[int], int]:
    """The statuses the poster reported answered, in order, and how many requests it failed."""
    answered: list[tuple[int, int]] = []
    failed: list[int] = []

    async def run() -> None:
        poster: Poster[int] = Poster(
            "http://127.0.0.1:9/",
            5.0,
            lambda tag: (b"", b""),
            lambda tag, status: answered.append((tag, status)),
            lambda tag, reason: failed.append(tag),
        )
        connection = _Connection(poster)
        connection.connection_made(Transport())
        poster.open.append(connection)
        connection.send(list(range(count)))
        start = 0
        for cut in [*sorted(set(cuts)), len(data)]:
            if start < cut <= len(data):
                connection.data_received(data[start:cut])
                start = cut
        if closes or connection.transport.is_closing():  # type: ignore[union-attr]
            connection.connection_lost(None)
        if connection.timer is not None:
            connection.timer.cancel()
        poster.close()

    asyncio.run(run())
    assert [tag for tag, _ in answered] == list(range(len(answered))), "answered out of order"
    return [status for _, status in answered], len(failed)


@st.composite
def runs(draw: st.DrawFn) -> Run:
    count = draw(st.integers(1, 4))
    server = h11.Connection(h11.SERVER)
    data = b""
    for index in range(count):
        server.receive_data(b"POST / HTTP/1.1\r\nhost: sink\r\ncontent-length: 0\r\n\r\n")
        server.next_event(), server.next_event()
        for _ in range(draw(st.integers(0, 1))):
            data += server.send(h11.InformationalResponse(status_code=100, headers=[]))
        status = draw(st.sampled_from([200, 202, 204, 400, 500, 503]))
        body = b"" if status == 204 else draw(st.binary(max_size=12))
        last = index == count - 1
        framing = draw(st.sampled_from(["length", "chunked", "none" if last else "length"]))
        headers = []
        if framing == "length" and status != 204:
            headers.append(("content-length", str(len(body))))
        elif framing == "chunked" and status != 204:
            headers.append(("transfer-encoding", "chunked"))
        if last and draw(st.booleans()):
            headers.append(("connection", "close"))
        data += server.send(h11.Response(status_code=status, headers=headers))
        if body:
            data += server.send(h11.Data(data=body)) or b""
        data += server.send(h11.EndOfMessage()) or b""
        if server.our_state is h11.MUST_CLOSE:
            return Run(data, count, True, draw(st.lists(st.integers(0, len(data)), max_size=3)))
        server.start_next_cycle()
    closes = draw(st.booleans())
    return Run(data, count, closes, draw(st.lists(st.integers(0, len(data)), max_size=3)))


@given(runs())
@MANY
def test_pipelined_answers_are_counted_as_h11_reads_them(run: Run) -> None:
    expected = h11_statuses(run.data, run.count, run.closes)
    got, failed = poster_statuses(run.data, run.count, run.closes, run.cuts)
    assert got == expected
    assert len(got) + failed <= run.count


@given(runs(), st.data())
@MANY
def test_mutated_answers_are_not_counted_beyond_what_h11_reads(run: Run, data: st.DataObject) -> None:
    wire = bytearray(run.data)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.integers(0, len(wire)))
        action = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        if action == "truncate":
            del wire[where:]
        elif action == "flip" and where < len(wire):
            wire[where] ^= data.draw(st.integers(1, 255))
        elif action == "insert":
            wire[where:where] = data.draw(st.sampled_from([b"\r\n", b" ", b"\x00", b":", b"0", b"\r"]))
        elif action == "delete":
            del wire[where : where + data.draw(st.integers(1, 3))]
    expected = h11_statuses(bytes(wire), run.count, run.closes)
    got, _ = poster_statuses(bytes(wire), run.count, run.closes, run.cuts)
    assert got[: len(expected)] == expected[: len(got)]
    if len(got) > len(expected):  # only where llhttp reads what h11 refuses, as listed in LENIENT
        regular = functools.reduce(lambda wire, make: make(wire), LENIENT.values(), bytes(wire))
        read = h11_statuses(regular, run.count, run.closes)
        if run.closes and len(got) == len(read) + 1:
            read.append(got[-1])  # CUT_SHORT
        assert read[: len(got)] == got, repr(bytes(wire))


#: On purpose, unlike h11: the answer being read when the sink closes the connection counts as
#: answered with its status once its head was read, even when its body was cut short (h11 calls
#: that answer incomplete): the sink said what it made of the event, which is all the log counts.
CUT_SHORT = "an answer whose body the connection's end cut short counts with its status"
