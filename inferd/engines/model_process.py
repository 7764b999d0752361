"""The model process of an isolated worker: the models, their gRPC server, and the HTTP app, which
answers requests the worker forwards over a socket instead of from a listening port.

It ignores SIGINT and SIGTERM: its worker decides when it stops (a ``close`` frame once HTTP has
drained), and it exits on its own when the worker is gone (the socket reads as closed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from typing import Any

import orjson
from starlette.types import ASGIApp, Message

from inferd.config.settings import Settings
from inferd.core.processes import end_with_parent
from inferd.engines.frames import read_frame, write_frame
from inferd.engines.local import LocalBackend, run
from inferd.protocols.status import INTERNAL_MESSAGE
from inferd.server.app import build_runtime
from inferd.server.logging import configure_logging, log_format

logger = logging.getLogger("inferd.model_process")


def main(fields: dict[str, Any], channel: socket.socket) -> None:
    """The spawned process: load the models, say ready, answer frames until told to close."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    end_with_parent(lambda: os._exit(1))  # even when user code holds the event loop
    settings = Settings(**fields)
    configure_logging(settings.log_level, log_format(settings))
    run(_serve(settings, channel))


async def _serve(settings: Settings, channel: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=channel)
    backend = LocalBackend(build_runtime(settings), shared_grpc_port=True)  # isolated: a supervisor's worker
    try:
        try:
            names, grpc_port = await backend.start()
        except Exception as exc:
            logger.exception("the model process could not start")
            write_frame(writer, "failed", getattr(exc, "message", f"{type(exc).__name__}: {exc}"))
            await writer.drain()
            return
        app = backend.app()
        write_frame(writer, "ready", names, grpc_port)
        await _answer_frames(app, backend, settings, reader, writer)
    finally:
        await backend.close()
        writer.close()


async def _answer_frames(
    app: ASGIApp,
    backend: LocalBackend,
    settings: Settings,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    tasks: set[asyncio.Task[None]] = set()
    draining: asyncio.Task[None] | None = None
    while (frame := await read_frame(reader)) is not None:
        kind = frame[0]
        if kind == "request":
            task = asyncio.create_task(_answer(app, writer, *frame[1:]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif kind == "drain":  # the worker stopped accepting: so does gRPC, finishing its calls
            draining = asyncio.create_task(backend.drain(settings.graceful_timeout))
        else:  # "close": HTTP has drained in the worker
            break
    if draining is not None:
        await draining
    for task in tasks:
        task.cancel()


async def _answer(
    app: ASGIApp, writer: asyncio.StreamWriter, call: int, scope: dict[str, Any], body: bytes
) -> None:
    """Run one forwarded request through the app and send back its whole answer."""
    answered = asyncio.Event()
    start: dict[str, Any] = {}
    chunks: list[bytes] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # as a server does: the client is gone only once the answer is sent
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    try:
        await app(scope, receive, send)
    except Exception:  # the app's error middleware has answered 500 when it could
        logger.exception("forwarded request %s failed", call)
    if not start:
        start = {"status": 500, "headers": [(b"content-type", b"application/json")]}
        chunks = [orjson.dumps({"error": INTERNAL_MESSAGE})]
    answered.set()
    write_frame(writer, "response", call, start["status"], list(start.get("headers", [])), b"".join(chunks))
