"""The upstream client against raw loopback servers: answers framed every way HTTP/1.1 allows, the
one retry (a reused connection found closed before anything was written), and no retry after."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from inferd.engines.upstream import Pool, UpstreamError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
REQUEST = b"GET / HTTP/1.1\r\nhost: test\r\n\r\n"


async def read_head(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Starts a server of a handler (its connection closed when the handler returns) until the test
    ends; the handlers still running then are cancelled."""
    servers: list[asyncio.Server] = []
    handlers: set[asyncio.Task[None]] = set()

    async def start(handler: Handler) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            handlers.add(task)
            try:
                await handler(reader, writer)
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"127.0.0.1:{server.sockets[0].getsockname()[1]}"

    yield start
    for task in handlers:
        task.cancel()
    await asyncio.gather(*handlers, return_exceptions=True)
    for server in servers:
        server.close()
        await server.wait_closed()
    await asyncio.sleep(0.01)  # the closed connections' callbacks run


async def read_answer(pool: Pool, request: bytes = REQUEST) -> tuple[int, bytes, bool]:
    connection = await pool.send(request)
    status, _ = await connection.head()
    parts, more = [], True
    while more:
        data, more = await connection.body()
        parts.append(data)
    reused = connection.reused
    pool.release(connection)
    return status, b"".join(parts), reused


async def test_answers_until_close_and_after_an_interim_one(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nx-a: 1\r\n\r\nuntil")
        await writer.drain()
        writer.write(b" the end")
        writer.close()

    pool = Pool(await raw_server(handler))
    assert await read_answer(pool) == (200, b"until the end", False)
    assert pool.idle == []  # the connection ended with the answer


async def test_a_closed_idle_connection_is_replaced_once(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                await read_head(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

    pool = Pool(await raw_server(handler))
    assert await read_answer(pool) == (200, b"ok", False)
    assert await read_answer(pool) == (200, b"ok", True)  # kept alive and reused
    (idle,) = pool.idle
    assert idle.transport is not None
    idle.transport.close()  # closing, nothing written yet: the request goes on a new connection
    assert await read_answer(pool) == (200, b"ok", False)
    assert connections == 2
    pool.close()


async def test_no_retry_once_the_request_was_written(raw_server: Callable[[Handler], Awaitable[str]]) -> None:
    seen = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seen
        await read_head(reader)
        seen += 1
        writer.transport.abort()  # read the request, then dropped the connection

    pool = Pool(await raw_server(handler))
    with pytest.raises(UpstreamError, match="closed the connection before it answered") as failed:
        await read_answer(pool)
    assert failed.value.sent and seen == 1


async def test_refused_and_silent_upstreams(raw_server: Callable[[Handler], Awaitable[str]]) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    pool = Pool(await raw_server(silent), read_timeout=0.2)
    with pytest.raises(UpstreamError, match=r"sent nothing for 0\.2 seconds"):
        await read_answer(pool)
    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()  # nothing listens there any more
    await server.wait_closed()
    with pytest.raises(UpstreamError, match="cannot connect") as refused:
        await read_answer(Pool(address))
    assert not refused.value.sent
