"""Isolated workers (``--isolate``): user code runs in a model process behind the worker's HTTP server.

When user code kills its process (a segfault, ``os._exit``), the HTTP connections that process
served would die with it, and clients would see a reset. Here the worker's event loop only holds
connections and forwards each request (its ASGI scope and body) to the model process, which runs
inferd's whole app, every dialect's routes included, and the gRPC server. If the model process
dies, outgrows ``worker_memory_limit`` or leaves a request unanswered for ``hang_timeout`` seconds,
every request in it fails with `ModelProcessLost` (503 and ``Retry-After``), the event is logged and
counted in ``inferd_worker_restarts_total{process="model"}``, and a new model process loads the
models again while the worker keeps accepting (new requests wait for it, up to ``restart_wait``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import socket
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from inferd.config.settings import Settings
from inferd.core.errors import ModelLoadError, ModelProcessLost, RetryLater
from inferd.core.keeper import KeptProcess
from inferd.core.metrics import RESTARTS
from inferd.core.processes import MIB
from inferd.engines import model_process
from inferd.engines.frames import read_frame, write_frame
from inferd.protocols import prometheus
from inferd.server.app import create_metrics_app
from inferd.server.errors import error_response

logger = logging.getLogger("inferd.isolation")
_spawn = multiprocessing.get_context("spawn")
#: Seconds between attempts to start a model process whose models fail to load.
RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)
#: The parts of an HTTP scope the model process needs (the rest cannot cross a process boundary).
SCOPE_KEYS = (
    "type", "asgi", "http_version", "method", "scheme", "path", "raw_path",
    "root_path", "query_string", "headers", "client", "server",
)  # fmt: skip

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


@dataclass
class _Generation:
    """One model process and the requests waiting for it."""

    process: KeptProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    names: tuple[str, ...]
    grpc_port: int | None
    pending: dict[int, asyncio.Future[Answer]] = field(default_factory=dict)


class ModelProcess:
    """The `inferd.engines.local.Backend` of an isolated worker: its model process, replaced when lost."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.current: _Generation | None = None
        self._available = asyncio.Event()
        self._calls = itertools.count(1)
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> tuple[tuple[str, ...], int | None]:
        generation = await self._launch()
        self._adopt(generation)
        if self.settings.worker_memory_limit is not None:
            self._keep(self._watch_memory(self.settings.worker_memory_limit * MIB))
        return generation.names, generation.grpc_port

    def app(self) -> ASGIApp:
        return Forwarder(self, self.settings.max_body_size)

    async def drain(self, grace: float) -> None:
        """The model process stops its gRPC server gracefully; HTTP drains in this process."""
        if self.current is not None:
            write_frame(self.current.writer, "drain")

    async def close(self) -> None:
        self._closing = True
        for task in self._tasks:
            task.cancel()
        generation = self.current
        if generation is None:
            return
        write_frame(generation.writer, "close")  # it ignores SIGTERM: its worker says when it stops
        await asyncio.to_thread(generation.process.stop, self.settings.graceful_timeout + 5, terminate=False)
        generation.writer.close()

    async def call(self, scope: dict[str, Any], body: bytes) -> Answer:
        """Forward one request; its answer, or `ModelProcessLost` if the model process is lost first."""
        generation = await self._ready_generation()
        call = next(self._calls)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        generation.pending[call] = future
        try:
            write_frame(generation.writer, "request", call, scope, body)
        except (ConnectionError, RuntimeError):  # the socket closed under the write
            generation.pending.pop(call, None)
            raise _lost_error(generation) from None
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.settings.hang_timeout)
        except TimeoutError:
            logger.error(
                "the model process %s left a request unanswered for %s s; killing it as hung",
                generation.process.pid,
                self.settings.hang_timeout,
            )
            generation.process.kill("hang")
            return await future  # failed with the others once the process is gone
        finally:
            generation.pending.pop(call, None)

    async def _ready_generation(self) -> _Generation:
        """The model process, waiting up to ``restart_wait`` for one being started."""
        if self.current is None:
            try:
                await asyncio.wait_for(self._available.wait(), self.settings.restart_wait)
            except TimeoutError:
                raise ModelProcessLost("the model process is being replaced; retry later") from None
        assert self.current is not None
        return self.current

    async def _launch(self) -> _Generation:
        """Spawn a model process and wait until its models are loaded; ModelLoadError if they fail."""
        ours, theirs = socket.socketpair()
        process = _spawn.Process(
            target=model_process.main, args=(self.settings.model_dump(), theirs), name="inferd-model"
        )
        try:
            await asyncio.to_thread(process.start)
        finally:
            theirs.close()  # the child holds the only other end, so its death reads as end of stream
        reader, writer = await asyncio.open_connection(sock=ours)
        frame = await read_frame(reader)
        if frame is None or frame[0] != "ready":
            writer.close()
            await asyncio.to_thread(process.join)
            reason = frame[1] if frame else f"the model process exited with code {process.exitcode}"
            raise ModelLoadError(reason)
        _, names, grpc_port = frame
        logger.info("model process %s is ready", process.pid)
        return _Generation(KeptProcess(process, "model process"), reader, writer, tuple(names), grpc_port)

    def _adopt(self, generation: _Generation) -> None:
        self.current = generation
        self._available.set()
        self._keep(self._read(generation))

    async def _read(self, generation: _Generation) -> None:
        while (frame := await read_frame(generation.reader)) is not None:
            _, call, status, headers, body = frame
            future = generation.pending.pop(call, None)
            if future is not None and not future.done():
                future.set_result((status, headers, body))
        await self._lost(generation)

    async def _lost(self, generation: _Generation) -> None:
        """The model process is gone: fail what was in it, count why, and start another."""
        self.current = None
        self._available.clear()
        lost = [future for future in generation.pending.values() if not future.done()]
        for future in lost:
            future.set_exception(_lost_error(generation))
        generation.writer.close()
        await asyncio.to_thread(generation.process.join)
        if self._closing:
            return
        reason = generation.process.reason()
        RESTARTS.labels("model", reason).inc()
        generation.process.forget()
        logger.error(
            "model process %s was lost (%s, exit code %s); %d in-flight requests got 503; starting a new one",
            generation.process.pid,
            reason,
            generation.process.exitcode or 0,
            len(lost),
        )
        await self._restart()

    async def _restart(self) -> None:
        for attempt in itertools.count():
            if self._closing:
                return
            try:
                generation = await self._launch()
            except ModelLoadError as exc:
                delay = RESTART_DELAYS[min(attempt, len(RESTART_DELAYS) - 1)]
                logger.error(
                    "a new model process failed to start (%s); trying again in %s s", exc.message, delay
                )
                await asyncio.sleep(delay)
                continue
            self._adopt(generation)
            return

    async def _watch_memory(self, limit: int) -> None:
        while True:
            await asyncio.sleep(self.settings.memory_check_interval)
            if self.current is not None:
                self.current.process.over_memory(limit)

    def _keep(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


LOST_BECAUSE = {
    "hang": "the model did not answer in time",
    "memory": "the model's process outgrew its memory limit",
}


def _lost_error(generation: _Generation) -> ModelProcessLost:
    cause = LOST_BECAUSE.get(generation.process.killed_for or "", "the model's process died")
    return ModelProcessLost(f"{cause} while answering; it is being replaced, retry later")


class Forwarder:
    """The ASGI app of an isolated worker: ``/metrics`` here (it stays up during a restart), every
    other request through the model process. The body is read here, up to one byte over the limit,
    so the model process answers 413 as usual without this process buffering more."""

    def __init__(self, backend: ModelProcess, max_body_size: int) -> None:
        self.backend = backend
        self.max_body_size = max_body_size
        self.metrics = create_metrics_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == prometheus.PATH:
            await self.metrics(scope, receive, send)
            return
        body = await self._body(receive)
        try:
            status, headers, content = await self.backend.call(
                {key: scope[key] for key in SCOPE_KEYS if key in scope}, body
            )
        except RetryLater as exc:
            response = error_response(exc)
            rid = dict(scope["headers"]).get(b"x-request-id")
            if rid is not None:
                response.headers["x-request-id"] = rid.decode("latin-1")
            await response(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            if size <= self.max_body_size:
                chunks.append(chunk[: self.max_body_size + 1 - size])
                size += len(chunks[-1])
            more = message.get("more_body", False)
        return b"".join(chunks)
