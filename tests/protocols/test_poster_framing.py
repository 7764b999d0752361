"""What the property test of the payload log's client against h11 found
(tests/fuzz/test_poster_answers_reference.py), against a sink on loopback: an answer that turns out
not to be HTTP/1.1 after its status line fails its event; it was counted answered with that status."""

from __future__ import annotations

import asyncio
import time

from inferd.protocols.poster import Poster

BROKEN = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nZZ\r\n"  # no chunk size


async def test_an_answer_broken_after_its_status_fails_its_event() -> None:
    async def sink(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(BROKEN)
        await writer.drain()
        await reader.read()  # until the poster closes
        writer.close()

    server = await asyncio.start_server(sink, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    answered: list[tuple[str, int]] = []
    failed: list[tuple[str, str]] = []
    poster: Poster[str] = Poster(
        f"http://127.0.0.1:{port}/",
        5.0,
        lambda tag: (b"content-type: text/plain\r\n", b"event"),
        lambda tag, status: answered.append((tag, status)),
        lambda tag, reason: failed.append((tag, reason)),
    )
    started = time.monotonic()
    poster.post("one")
    async with asyncio.timeout(5):
        while not answered and not failed:
            await asyncio.sleep(0.01)
    poster.close()
    server.close()
    await server.wait_closed()
    assert answered == []
    assert [tag for tag, _ in failed] == ["one"]
    assert "not HTTP/1.1" in failed[0][1]
    assert time.monotonic() - started < 5
