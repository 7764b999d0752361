"""uvicorn's connection calling `inferd.server.fast.FastInfer` for V2 infer, without an ASGI cycle.

For a request `FastInfer` takes, the connection keeps the body as it arrives and, once the request
is whole and its turn has come, runs one task that gets the answer and writes it in one piece: no
scope, no ``receive``/``send`` messages, no event per request, no header checks of the app's own
headers. Everything else of the connection is uvicorn's and `LimitedHttpToolsProtocol`'s: parsing,
head limits, keep-alive and its timeout, pipelining (a taken request waits in uvicorn's queue like any
other), graceful shutdown (a request being answered finishes, then the connection closes; its task
is among the server's tasks, which shutdown waits for), and a client gone before its answer.

`FastCycle` stands in for uvicorn's ``RequestResponseCycle`` where the protocol looks at one
(``self.cycle``, the pipeline): it has the attributes the protocol reads and sets.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from inferd.engines.connections import ConnectionLimits, LimitedHttpToolsProtocol
from inferd.protocols.asgi import BodyBuffer, body_length
from inferd.server.fast import FastInfer, FastRequest


class _NoEvent:
    """The cycle's ``message_event``: uvicorn sets it when the connection is lost; nothing waits."""

    def set(self) -> None:
        return None


NO_EVENT = _NoEvent()
NO_BODY = BodyBuffer(0)


class FastCycle:
    """One request `FastInfer` answers: its body so far, and the states the protocol asks about."""

    __slots__ = (
        *("body", "complete", "disconnected", "keep_alive", "request", "response_complete"),
        *("response_started", "turn"),
    )
    message_event = NO_EVENT

    def __init__(self, request: FastRequest, keep_alive: bool) -> None:
        self.request, self.keep_alive = request, keep_alive
        self.body = BodyBuffer(request.length)
        #: The body is whole; it is this request's turn (no earlier answer pending); the client left;
        #: the answer is written (in one piece: started is complete).
        self.complete = self.turn = self.disconnected = self.response_complete = False
        self.response_started = False


class FastInferProtocol(LimitedHttpToolsProtocol):
    fast: ClassVar[FastInfer]

    def on_headers_complete(self) -> None:
        cycle = None if self.over_limit else self.fast_cycle()
        if cycle is None:
            super().on_headers_complete()
            return
        self.head_ended()
        existing, self.cycle = self.cycle, cast(Any, cycle)
        if existing is None or existing.response_complete:
            cycle.turn = True
        else:  # pipelined behind an answer in progress: queued as uvicorn queues its own
            self.flow.pause_reading()
            self.pipeline.appendleft((cast(Any, cycle), self.app))

    def fast_cycle(self) -> FastCycle | None:
        """A cycle of this request when `FastInfer` takes it."""
        url, parser = self.url, self.parser
        if b"?" in url or b"%" in url or not url.isascii() or parser.should_upgrade():
            return None
        request = self.fast.take(parser.get_method(), url.decode("ascii"), self.headers)
        if request is None:
            return None
        keep_alive = parser.get_http_version() != "1.0" and parser.should_keep_alive()
        return FastCycle(request, keep_alive)

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if isinstance(cycle, FastCycle):
            cycle.body.add(body)  # no more than its Content-Length (httptools), which FastInfer bounded
        else:
            super().on_body(body)

    def on_message_complete(self) -> None:
        cycle = self.cycle
        if not isinstance(cycle, FastCycle):
            super().on_message_complete()
            return
        self.request_ended()
        cycle.complete = True
        if cycle.turn:
            self.start(cycle)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        """A queued request's turn: a taken one starts once its body is whole."""
        if not isinstance(cycle, FastCycle):
            super()._start_asgi_task(cycle, app)
            return
        cycle.turn = True
        if cycle.complete:
            self.start(cycle)

    def start(self, cycle: FastCycle) -> None:
        task = self.loop.create_task(self.answer(cycle))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    async def answer(self, cycle: FastCycle) -> None:
        # an idle connection keeps its last cycle (uvicorn's pipeline), so not its body
        body, cycle.body = cycle.body.whole(), NO_BODY
        status, content, headers = await self.fast.answer(cycle.request, body)
        del body
        if self.flow.write_paused and not cycle.disconnected:
            await self.flow.drain()
        if cycle.disconnected:
            return
        lines = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            lines += [name, b": ", value, b"\r\n"]
        lines += [b"content-length: ", str(body_length(content)).encode(), b"\r\n"]
        for name, value in headers:
            lines += [name, b": ", value, b"\r\n"]
        if not cycle.keep_alive:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        if isinstance(content, bytes):
            lines.append(content)
            self.transport.write(b"".join(lines))
        else:  # binary tensors: written from the arrays' memory, not joined (protocols/asgi.py's Body)
            self.transport.writelines([b"".join(lines), *content])
        cycle.response_started = cycle.response_complete = True
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()


def fast_protocol(limits: ConnectionLimits, fast: FastInfer) -> type[FastInferProtocol]:
    """The protocol class of `inferd.engines.connections.limited_protocol` calling ``fast``."""
    return type("FastInferProtocol", (FastInferProtocol,), {"limits": limits, "fast": fast})
