"""The `inferd.core.tracing.Tracer` of a process with tracing on, on inferd's own spans
(`inferd.core.spans`), encoded for OTLP by `inferd.core.otlp` and sent by `inferd.core.export`.

The spans of a call: the request (SERVER), within it ``inferd.decode``, ``inferd.model`` (the model's
code, within its concurrency gate) and ``inferd.encode``; a batched model call adds, per request,
``inferd.batch.wait`` (from joining the queue to the batch's start), and one ``inferd.batch`` span
per batch, a root linked to the request span of each request in it. Calls to other servers (remote
graph nodes) are CLIENT spans whose context travels in ``traceparent``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from inferd import __version__
from inferd.core import export
from inferd.core.otlp import Encoder
from inferd.core.spans import (
    CLIENT,
    ERROR,
    INTERNAL,
    SERVER,
    Remote,
    Sampler,
    Sinks,
    Span,
    current,
    new_trace_id,
    remote,
)

T = TypeVar("T")
#: gRPC codes that are the caller's doing, not the server's: not an error of the server's span
_CALLER_CODES = frozenset(("OK", "INVALID_ARGUMENT", "NOT_FOUND", "UNAUTHENTICATED"))


class SpanTracer:
    """`inferd.core.tracing.Tracer` on `inferd.core.spans.Span` records."""

    def __init__(
        self, sinks: Sinks, sampler: Sampler | None = None, kept: list[export.Sink] | None = None
    ) -> None:
        self.sinks, self.sampler = sinks, sampler or Sampler()
        #: The sinks behind ``sinks``, to flush (tests, shutdown).
        self.kept = kept or []

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> SpanTracer:
        """A tracer sampling and exporting as the ``OTEL_*`` variables say."""
        propagators = {p.strip().lower() for p in environ.get("OTEL_PROPAGATORS", "").split(",")} - {""}
        if propagators - {"tracecontext", "baggage", "none"}:
            raise ValueError(
                f"OTEL_PROPAGATORS={environ['OTEL_PROPAGATORS']!r}: inferd reads and passes on W3C "
                "trace context (tracecontext)"
            )
        sampler = Sampler.from_environment(environ)
        kept = export.sinks(environ, Encoder(export.resource(environ), "inferd", __version__))
        return cls(tuple(sink.add for sink in kept), sampler, kept)

    def server(
        self,
        name: str,
        protocol: str,
        traceparent: str | None,
        tracestate: str | None,
        attributes: dict[str, Any],
    ) -> Span:
        attributes["inferd.protocol"] = protocol
        if traceparent is None:  # the common case, in fewer steps
            trace_id = new_trace_id()
            return Span(self.sinks, name, trace_id, b"", self.sampler.root(trace_id), SERVER, attributes)
        return self.start(name, SERVER, attributes, remote(traceparent, tracestate))

    def start(
        self,
        name: str,
        kind: int = INTERNAL,
        attributes: dict[str, Any] | None = None,
        parent: Remote | None = None,
    ) -> Span:
        """The first span of a trace in this process: a child of the caller's, or a new trace's root."""
        if parent is None:
            trace_id = new_trace_id()
            return Span(self.sinks, name, trace_id, b"", self.sampler.root(trace_id), kind, attributes)
        sampled = self.sampler.sampled(parent.trace_id, parent)
        return Span(
            self.sinks, name, parent.trace_id, parent.span_id, sampled, kind, attributes, parent.trace_state
        )

    def finish(self, span: Span, status: int | None = None, grpc_code: str | None = None) -> None:
        attributes = span.attributes
        if not span.sampled or attributes is None:  # (a request span always has attributes)
            return
        if status is not None:
            attributes["http.response.status_code"] = status
            if status >= 500:
                span.status = ERROR
        if grpc_code is not None:
            attributes["rpc.grpc.status_code"] = grpc_code
            if grpc_code not in _CALLER_CODES:
                span.fail(grpc_code)

    def model(self, name: str, protocol: str) -> None:
        span = current.get()
        if span is not None and span.sampled:
            root = span.root
            if root.attributes is None:
                root.attributes = {}
            root.attributes["inferd.model"] = name
            root.attributes["inferd.protocol"] = protocol

    def span(self, name: str) -> Span:
        return self._start(name)

    def step(self, name: str, work: Callable[..., T], *args: Any) -> T:
        # not made current: nothing below a decode or an encode makes spans
        parent = current.get()
        if parent is None:
            span = self._start(name)
        elif parent.sampled:  # parent.child(name), one call fewer on every request
            span = Span(
                parent.sinks,
                name,
                parent.trace_id,
                parent.span_id,
                True,
                INTERNAL,
                None,
                parent.trace_state,
                parent.above or parent,
            )
        else:
            return work(*args)
        try:
            result = work(*args)
        except BaseException as exc:
            span.record(exc)
            span.end()
            raise
        span.end()
        return result

    @contextmanager
    def client(self, name: str, attributes: Mapping[str, Any]) -> Iterator[dict[str, str]]:
        with self._start(name, CLIENT, dict(attributes)) as span:
            headers = {"traceparent": span.traceparent()}
            if span.trace_state:
                headers["tracestate"] = span.trace_state
            yield headers

    def waiting(self) -> Any:
        return current.get(), time.time_ns()

    def batch(self, waiting: list[Any], size: int) -> Span:
        links = []
        for parent, started in waiting:
            if parent is None:
                continue
            if parent.sampled:
                wait = parent.child("inferd.batch.wait")
                wait.start_ns = started  # when the request joined the queue
                wait.end()
            request = parent.root
            links.append((request.trace_id, request.span_id, request.trace_state))
        attributes = {"inferd.batch.requests": len(waiting), "inferd.batch.size": size}
        # a root of its own: it serves several requests, each linked, none its parent
        span = self.start("inferd.batch", INTERNAL, attributes)
        span.links = links
        return span

    def flush(self) -> None:
        """Send every span kept so far (in this thread)."""
        for sink in self.kept:
            sink.flush()

    def _start(self, name: str, kind: int = INTERNAL, attributes: dict[str, Any] | None = None) -> Span:
        """A child of the current span, or the root of a new trace."""
        parent = current.get()
        if parent is not None:
            return parent.child(name, kind, attributes)
        return self.start(name, kind, attributes)
