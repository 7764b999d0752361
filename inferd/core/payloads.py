"""Payload logging: requests and responses sent to an HTTP sink in the background.

A protocol hands `PayloadLog.request` the payload it received; the log decides (the model's mode,
the sample) whether the call is logged, queues the request event, and returns an `Exchange` to
queue the response with, or None. Queueing is ``put_nowait`` on a bounded queue: the request path
never waits for the sink. A few sender tasks per process drain the queue over one kept-alive HTTP
client; what does not fit the queue is dropped, counted and warned about once per interval. How an
event looks on the wire (KServe's CloudEvents) is the encoder's business
(`inferd.protocols.cloudevents`), given to the log by the server.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferd.core import metrics
from inferd.core.model_settings import model_settings
from inferd.core.settings import ServerSettings

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("inferd.payloads")

#: The kinds of event, which are also bits of what a model logs.
REQUEST, RESPONSE = 1, 2
MODES = {"all": REQUEST | RESPONSE, "request": REQUEST, "response": RESPONSE}
KINDS = {REQUEST: "request", RESPONSE: "response"}
#: Sender tasks per process: sends to a sink on the same network take about a millisecond, and one
#: task at a time would cap the events at about a thousand a second.
SENDERS = 4
#: Seconds between two warnings about dropped events.
WARN_EVERY = 10.0


@dataclass(frozen=True, slots=True)
class Event:
    """One payload to log: ``kind`` `REQUEST` or `RESPONSE`, ``id`` shared by a call's two events,
    ``time`` since the epoch, ``extensions`` more attributes of the event (name, value)."""

    kind: int
    id: str
    model: str
    body: bytes
    content_type: str
    time: float
    extensions: tuple[tuple[str, str], ...] = ()


#: The HTTP headers of an event, its payload being the body (the wire format).
Encoder = Callable[[Event], Mapping[str, str]]


class Exchange:
    """A logged call whose response is to be logged too."""

    __slots__ = ("_id", "_log", "_model")

    def __init__(self, log: PayloadLog, model: str, id: str) -> None:
        self._log, self._model, self._id = log, model, id

    def response(self, body: bytes, content_type: str, extensions: tuple[tuple[str, str], ...] = ()) -> None:
        self._log.put(Event(RESPONSE, self._id, self._model, body, content_type, time.time(), extensions))


class PayloadLog:
    """The payload log of one process. ``modes(name)``: what model ``name`` logs (bits of `REQUEST`
    and `RESPONSE`, 0 for nothing), asked once per model."""

    def __init__(
        self,
        url: str,
        encode: Encoder,
        modes: Callable[[str], int],
        sample: float = 1.0,
        queue_size: int = 1000,
        timeout: float = 2.0,
    ) -> None:
        self.url, self.encode, self.sample, self.timeout = url, encode, sample, timeout
        self._modes_of = modes
        self._modes: dict[str, int] = {}
        self._queue_size = queue_size
        self._queue: asyncio.Queue[Event] | None = None
        self._senders: list[asyncio.Task[None]] = []
        self._client: httpx.AsyncClient | None = None
        self._dropped_since_warning: dict[str, int] = {}
        self._warned_at = float("-inf")

    def request(
        self,
        model: str,
        id: str,
        body: bytes | Callable[[], bytes],
        content_type: str,
        extensions: tuple[tuple[str, str], ...] = (),
    ) -> Exchange | None:
        """Log a call's request as its model's mode and the sample say; returns what logs its
        response, or None when the response is not logged. ``body`` may be a function making it,
        called only when the request is logged."""
        modes = self._modes.get(model)
        if modes is None:
            modes = self._modes[model] = self._modes_of(model)
        if not modes or (self.sample < 1.0 and random.random() >= self.sample):
            return None
        if modes & REQUEST:
            if callable(body):
                body = body()
            self.put(Event(REQUEST, id, model, body, content_type, time.time(), extensions))
        return Exchange(self, model, id) if modes & RESPONSE else None

    def put(self, event: Event) -> None:
        """Queue ``event`` without waiting: dropped (and counted) when the queue is full."""
        queue = self._queue
        if queue is None:
            queue = self._start()
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:
            self._dropped(event.model, "queue_full")

    def _start(self) -> asyncio.Queue[Event]:
        """The queue and its senders, made on the first event, on the loop that serves requests."""
        import httpx  # only when logging is on and used

        self._queue = queue = asyncio.Queue[Event](self._queue_size)
        self._client = httpx.AsyncClient(
            timeout=self.timeout,
            limits=httpx.Limits(max_connections=SENDERS, max_keepalive_connections=SENDERS),
        )
        self._senders = [asyncio.create_task(self._send_each(queue, self._client)) for _ in range(SENDERS)]
        return queue

    async def _send_each(self, queue: asyncio.Queue[Event], client: httpx.AsyncClient) -> None:
        while True:
            event = await queue.get()
            try:
                await self._send(client, event)
            finally:
                queue.task_done()

    async def _send(self, client: httpx.AsyncClient, event: Event) -> None:
        try:
            answer = await client.post(self.url, content=event.body, headers=self.encode(event))
        except Exception as exc:  # a dead or slow sink, whatever httpx says about it
            metrics.PAYLOAD_FAILURES.labels(event.model).inc()
            logger.debug("payload log: sending to %s failed: %r", self.url, exc)
            return
        if 200 <= answer.status_code < 300:
            metrics.PAYLOAD_EVENTS.labels(event.model, KINDS[event.kind]).inc()
        else:
            metrics.PAYLOAD_FAILURES.labels(event.model).inc()
            logger.debug("payload log: %s answered %d", self.url, answer.status_code)

    def _dropped(self, model: str, reason: str, count: int = 1) -> None:
        metrics.PAYLOAD_DROPPED.labels(model, reason).inc(count)
        since = self._dropped_since_warning
        since[reason] = since.get(reason, 0) + count
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY or reason == "shutdown":
            counts = ", ".join(f"{number} ({why})" for why, number in since.items())
            logger.warning(
                "payload log: event(s) dropped since the last warning: %s; the sink %s is slower than "
                "the requests or unreachable",
                counts,
                self.url,
            )
            self._warned_at = now
            since.clear()

    async def close(self, deadline: float | None = None) -> None:
        """Send what is queued within ``deadline`` seconds (the send timeout by default), drop the
        rest, and stop the senders."""
        queue, client = self._queue, self._client
        if queue is None or client is None:
            return
        try:
            await asyncio.wait_for(queue.join(), self.timeout if deadline is None else deadline)
        except TimeoutError:
            pass
        for sender in self._senders:
            sender.cancel()
        await asyncio.gather(*self._senders, return_exceptions=True)
        left: dict[str, int] = {}
        while not queue.empty():
            model = queue.get_nowait().model
            left[model] = left.get(model, 0) + 1
        for model, count in left.items():
            self._dropped(model, "shutdown", count)
        await client.aclose()
        self._queue, self._client, self._senders = None, None, []


def payload_log(settings: ServerSettings, encode: Encoder) -> PayloadLog | None:
    """The payload log the settings ask for (None: off), its events encoded by ``encode``."""
    if settings.payload_log_url is None or settings.payload_log_sample == 0:
        return None

    def modes(name: str) -> int:
        own = model_settings(settings, name)
        if own.payload_log is False:
            return 0
        return MODES[own.payload_log_mode or settings.payload_log_mode]

    return PayloadLog(
        settings.payload_log_url,
        encode,
        modes,
        settings.payload_log_sample,
        settings.payload_log_queue,
        settings.payload_log_timeout,
    )
