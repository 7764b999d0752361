"""The OpenTelemetry API over inferd's spans, so spans a model makes with ``opentelemetry.trace``
(``trace.get_tracer(__name__).start_as_current_span(...)``) fall inside the request's trace and leave
with inferd's own. Installed as OpenTelemetry's global tracer provider when tracing is on and
``opentelemetry-api`` is installed (the ``tracing`` extra); imported at no other time.

Such a span's parent is the span current in inferd (the model call's ``inferd.model``), or one the
code passes in a context. Within a span the model started, ``trace.get_current_span()`` returns it;
outside one it returns OpenTelemetry's invalid span (inferd's own spans do not enter OpenTelemetry's
context: that would cost every request).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from time import time_ns
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util._decorator import _agnosticcontextmanager
from opentelemetry.util.types import Attributes

from inferd.core.spans import ERROR, OK, Remote, Span, current
from inferd.core.tracer import SpanTracer

_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: OK, StatusCode.ERROR: ERROR}


def install(tracer: SpanTracer) -> None:
    """Make the API's global tracer provider hand out tracers making ``tracer``'s spans."""
    trace.set_tracer_provider(ApiTracerProvider(tracer))


class ApiTracerProvider(trace.TracerProvider):
    def __init__(self, tracer: SpanTracer) -> None:
        self.tracer = ApiTracer(tracer)

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return self.tracer


class ApiTracer(trace.Tracer):
    """An API tracer making inferd spans (reported under inferd's instrumentation scope)."""

    def __init__(self, tracer: SpanTracer) -> None:
        self.tracer = tracer

    def start_span(
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> ApiSpan:
        found = trace.get_current_span(context)
        values = {key: _value(value) for key, value in (attributes or {}).items()}
        if isinstance(found, ApiSpan):
            span = found.span.child(name, kind.value + 1, values)
        elif context is None and (ours := current.get()) is not None:
            span = ours.child(name, kind.value + 1, values)
        else:  # a new trace, or under a span context the code brought (read from a carrier)
            span = self.tracer.start(name, kind.value + 1, values, _remote(found.get_span_context()))
        if start_time:
            span.start_ns = start_time
        made = ApiSpan(span, record_exception, set_status_on_exception)
        for link in links or ():
            made.add_link(link.context, link.attributes)
        return made

    @_agnosticcontextmanager  # what the API's own tracers use: a decorator of async functions too
    def start_as_current_span(
        self, name: str, *args: Any, end_on_exit: bool = True, **kwargs: Any
    ) -> Iterator[trace.Span]:
        """`start_span`'s span (same arguments), current in inferd and in OpenTelemetry's context."""
        made = self.start_span(name, *args, **kwargs)
        ours = current.set(made.span)
        theirs = otel_context.attach(trace.set_span_in_context(made))
        try:
            yield made
        except BaseException as exc:
            if made.on_exception[0]:
                made.record_exception(exc)
            if made.on_exception[1]:
                made.span.fail(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            otel_context.detach(theirs)
            current.reset(ours)
            if end_on_exit:
                made.end()


class ApiSpan(trace.Span):
    """An inferd span behind the API's ``Span``."""

    def __init__(
        self, span: Span, record_exception: bool = True, set_status_on_exception: bool = True
    ) -> None:
        self.span = span
        #: What leaving `ApiTracer.start_as_current_span`'s block by an exception does: record it, set ERROR.
        self.on_exception = record_exception, set_status_on_exception

    def get_span_context(self) -> SpanContext:
        span = self.span
        return SpanContext(
            int.from_bytes(span.trace_id, "big"),
            int.from_bytes(span.span_id, "big"),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED if span.sampled else TraceFlags.DEFAULT),
            trace_state=TraceState.from_header([span.trace_state]) if span.trace_state else None,
        )

    def set_attribute(self, key: str, value: Any) -> None:
        self.span.set(key, _value(value))

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def add_event(self, name: str, attributes: Attributes = None, timestamp: int | None = None) -> None:
        event = (
            timestamp or time_ns(),
            name,
            {key: _value(value) for key, value in (attributes or {}).items()},
        )
        self.span.events = [*(self.span.events or ()), event]

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        if context.is_valid:
            link = (context.trace_id.to_bytes(16, "big"), context.span_id.to_bytes(8, "big"), "")
            self.span.links = [*(self.span.links or ()), link]

    def update_name(self, name: str) -> None:
        self.span.name = name

    def is_recording(self) -> bool:
        return self.span.sampled and not self.span.end_ns

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        code = status.status_code if isinstance(status, Status) else status
        if isinstance(status, Status):
            description = status.description
        self.span.status, self.span.status_message = _STATUS[code], description or ""

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        status = self.span.status, self.span.status_message
        self.span.record(exception)
        self.span.status, self.span.status_message = status  # recording alone sets no status in the API

    def end(self, end_time: int | None = None) -> None:
        if not self.span.end_ns:
            self.span.end(end_time)


def _value(value: Any) -> Any:
    """An attribute value as inferd's encoder takes it (a sequence as a list)."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else value


def _remote(context: SpanContext) -> Remote | None:
    if not context.is_valid:
        return None
    trace_state = context.trace_state.to_header() if context.trace_state else ""
    return Remote(
        context.trace_id.to_bytes(16, "big"),
        context.span_id.to_bytes(8, "big"),
        context.trace_flags.sampled,
        trace_state,
    )
