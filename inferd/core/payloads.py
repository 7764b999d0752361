"""Payload logging: requests and responses sent to an HTTP sink in the background.

A protocol hands `PayloadLog.request` the payload it received; the log decides (the model's mode,
the sample) whether the call is logged, hands the request event to its sender, and returns an
`Exchange` to log the response with, or None. The request path never waits for the sink: the sender
only queues the event (`Sender.post`), and the log holds at most ``queue_size`` events not yet
answered by the sink; what does not fit is dropped, counted and warned about once per interval. How
an event looks on the wire (KServe's CloudEvents) and how it travels (HTTP/1.1 pipelined over a few
kept-alive connections) is the sender's business (`inferd.protocols.cloudevents`), given to the log
by the server.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from inferd.core import metrics
from inferd.core.model_settings import model_settings
from inferd.core.settings import ServerSettings

if TYPE_CHECKING:
    from inferd.core.counters import CounterChild

logger = logging.getLogger("inferd.payloads")

#: The kinds of event, which are also bits of what a model logs.
REQUEST, RESPONSE = 1, 2
MODES = {"all": REQUEST | RESPONSE, "request": REQUEST, "response": RESPONSE}
KINDS = {REQUEST: "request", RESPONSE: "response"}
#: Seconds between two warnings about dropped events.
WARN_EVERY = 10.0


class Event(NamedTuple):
    """One payload to log: ``kind`` `REQUEST` or `RESPONSE`, ``id`` shared by a call's two events,
    ``time`` since the epoch, ``extensions`` more attributes of the event (name, value). A tuple:
    two are made per logged call, on the request path."""

    kind: int
    id: str
    model: str
    body: bytes
    content_type: str
    time: float
    extensions: tuple[tuple[str, str], ...] = ()


class Sender(Protocol):
    """Sends a log's events to its sink and tells the log what became of each, once
    (`PayloadLog.answered` or `PayloadLog.failed`)."""

    def post(self, event: Event) -> None:
        """Send ``event`` soon, without waiting."""

    def close(self) -> list[Event]:
        """Stop at once; returns the events neither answered nor failed."""


#: Makes the sender of a log, on the loop serving requests, when the first event comes.
Connect = Callable[["PayloadLog"], Sender]


class Exchange:
    """A logged call whose response is to be logged too."""

    __slots__ = ("_id", "_log", "_model")

    def __init__(self, log: PayloadLog, model: str, id: str) -> None:
        self._log, self._model, self._id = log, model, id

    def response(self, body: bytes, content_type: str, extensions: tuple[tuple[str, str], ...] = ()) -> None:
        self._log.put(Event(RESPONSE, self._id, self._model, body, content_type, time.time(), extensions))


class PayloadLog:
    """The payload log of one process, sending to ``url``. ``modes(name)``: what model ``name``
    logs (bits of `REQUEST` and `RESPONSE`, 0 for nothing), asked once per model."""

    def __init__(
        self,
        url: str,
        connect: Connect,
        modes: Callable[[str], int],
        sample: float = 1.0,
        queue_size: int = 1000,
        timeout: float = 2.0,
    ) -> None:
        self.url, self.sample, self.timeout = url, sample, timeout
        self._connect = connect
        self._modes_of = modes
        self._modes: dict[str, int] = {}
        self._queue_size = queue_size
        self._sender: Sender | None = None
        #: Events given to the sender and not yet answered or failed.
        self._held = 0
        self._settled: asyncio.Future[None] | None = None  # while close() waits for _held to reach 0
        self._accepted: dict[tuple[str, int], CounterChild] = {}
        self._failures: dict[str, CounterChild] = {}
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
        """Send ``event`` without waiting: dropped (and counted) when the log holds its fill."""
        if self._held >= self._queue_size:
            self._dropped(event.model, "queue_full")
            return
        sender = self._sender
        if sender is None:
            sender = self._sender = self._connect(self)
        self._held += 1
        sender.post(event)

    def answered(self, event: Event, status: int) -> None:
        """The sink answered ``event`` with ``status``: accepted when 2xx, else a failure."""
        self._release()
        if 200 <= status < 300:
            counter = self._accepted.get((event.model, event.kind))
            if counter is None:
                counter = metrics.PAYLOAD_EVENTS.labels(event.model, KINDS[event.kind])
                self._accepted[event.model, event.kind] = counter
            counter.inc()
        else:
            self._failed(event.model)
            logger.debug("payload log: %s answered %d", self.url, status)

    def failed(self, event: Event, reason: str) -> None:
        """``event`` did not reach the sink, or no answer came (not retried)."""
        self._release()
        self._failed(event.model)
        logger.debug("payload log: sending to %s failed: %s", self.url, reason)

    def _release(self) -> None:
        self._held -= 1
        if self._held == 0 and self._settled is not None and not self._settled.done():
            self._settled.set_result(None)

    def _failed(self, model: str) -> None:
        counter = self._failures.get(model)
        if counter is None:
            counter = self._failures[model] = metrics.PAYLOAD_FAILURES.labels(model)
        counter.inc()

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
        """Send what is held within ``deadline`` seconds (the send timeout by default), drop the
        rest, and stop the sender."""
        sender = self._sender
        if sender is None:
            return
        if self._held:
            self._settled = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._settled, self.timeout if deadline is None else deadline)
            except TimeoutError:
                pass
            self._settled = None
        self._drop_on_shutdown(sender.close())
        self._sender, self._held = None, 0

    def _drop_on_shutdown(self, events: Iterable[Event]) -> None:
        left: dict[str, int] = {}
        for event in events:
            left[event.model] = left.get(event.model, 0) + 1
        for model, count in left.items():
            self._dropped(model, "shutdown", count)


def payload_log(settings: ServerSettings, connect: Connect) -> PayloadLog | None:
    """The payload log the settings ask for (None: off), its events sent by what ``connect`` makes."""
    if settings.payload_log_url is None or settings.payload_log_sample == 0:
        return None

    def modes(name: str) -> int:
        own = model_settings(settings, name)
        if own.payload_log is False:
            return 0
        return MODES[own.payload_log_mode or settings.payload_log_mode]

    return PayloadLog(
        settings.payload_log_url,
        connect,
        modes,
        settings.payload_log_sample,
        settings.payload_log_queue,
        settings.payload_log_timeout,
    )
