"""The OpenTelemetry side of `inferd.core.tracing`, imported only when tracing is on (the ``tracing``
extra: opentelemetry-sdk and the OTLP exporters).

Configured by the standard variables: ``OTEL_SERVICE_NAME`` (default ``inferd``) and
``OTEL_RESOURCE_ATTRIBUTES``; ``OTEL_TRACES_EXPORTER`` (``otlp``, the default, ``console`` or
``none``); ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``,
the default, or ``grpc``); the exporters' own ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT``, ``_HEADERS``,
``_TIMEOUT``...; ``OTEL_TRACES_SAMPLER`` (``parentbased_always_on`` by default); ``OTEL_BSP_*`` for the
batch span processor; ``OTEL_PROPAGATORS`` (W3C ``tracecontext,baggage`` by default).

The spans of a call: the request (SERVER), within it ``inferd.decode``, ``inferd.model`` (the model's
code, within its concurrency gate) and ``inferd.encode``; a batched model call adds, per request,
``inferd.batch.wait`` (from joining the queue to the batch's start), and one ``inferd.batch`` span
per batch, a root linked to the request span of each request in it. Calls to other servers (remote
graph nodes) are CLIENT spans whose context travels in ``traceparent``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from inferd import __version__

T = TypeVar("T")
DEFAULT_SERVICE = "inferd"
#: The request span of the call being answered (a batch links to it).
_request: ContextVar[Span | None] = ContextVar("inferd_request_span", default=None)


class OtelTracer:
    """`inferd.core.tracing.Tracer` on an OpenTelemetry SDK tracer."""

    def __init__(self, provider: trace.TracerProvider, propagators: str | None = None) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("inferd", __version__)
        #: W3C trace context alone unless OTEL_PROPAGATORS names others (the global composite costs more)
        self._extract = propagate.extract if propagators else TraceContextTextMapPropagator().extract

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> OtelTracer:
        """A tracer exporting as the ``OTEL_*`` variables say, also made OpenTelemetry's global one
        (so spans a model makes with the OpenTelemetry API join the request's trace)."""
        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
        sampler = environ.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
        fast = sampler == "parentbased_always_on"  # the default: the SDK's own costs more per span
        provider = TracerProvider(resource=resource, sampler=ParentOrAlwaysOn() if fast else None)
        for exporter in exporters(environ):
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        return cls(provider, environ.get("OTEL_PROPAGATORS"))

    @contextmanager
    def server(
        self, name: str, protocol: str, carrier: Iterable[tuple[str, str]], attributes: Mapping[str, Any]
    ) -> Iterator[Span]:
        parent = self._extract(dict(carrier))
        span = self._tracer.start_span(
            name, parent, SpanKind.SERVER, {"inferd.protocol": protocol, **attributes}
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        request = _request.set(span)
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            _request.reset(request)
            otel_context.detach(token)
            span.end()

    def finish(self, span: Span, status: int | None = None, grpc_code: str | None = None) -> None:
        if status is not None:
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
        if grpc_code is not None:
            span.set_attribute("rpc.grpc.status_code", grpc_code)
            if grpc_code not in ("OK", "INVALID_ARGUMENT", "NOT_FOUND", "UNAUTHENTICATED"):
                span.set_status(Status(StatusCode.ERROR, grpc_code))

    def model(self, name: str, protocol: str) -> None:
        span = _request.get()
        if span is not None:
            span.set_attributes({"inferd.model": name, "inferd.protocol": protocol})

    def span(self, name: str) -> AbstractContextManager[Span]:
        return self._tracer.start_as_current_span(name)

    def step(self, name: str, work: Callable[..., T], *args: Any) -> T:
        # not made current: nothing below a decode or an encode makes spans
        with self._tracer.start_span(name) as span:
            del span
            return work(*args)

    @contextmanager
    def client(self, name: str, attributes: Mapping[str, Any]) -> Iterator[dict[str, str]]:
        with self._tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes):
            headers: dict[str, str] = {}
            propagate.inject(headers)
            yield headers

    def waiting(self) -> Any:
        return otel_context.get_current(), time.time_ns(), _request.get()

    @contextmanager
    def batch(self, waiting: list[Any], size: int) -> Iterator[Span]:
        now = time.time_ns()
        links = []
        for context, started, request in waiting:
            self._tracer.start_span("inferd.batch.wait", context, start_time=started).end(now)
            if request is not None:
                links.append(Link(request.get_span_context()))
        attributes = {"inferd.batch.requests": len(waiting), "inferd.batch.size": size}
        # a root of its own: it serves several requests, each linked, none its parent
        span = self._tracer.start_span(
            "inferd.batch", otel_context.Context(), links=links, attributes=attributes
        )
        with trace.use_span(span, end_on_exit=True, record_exception=True, set_status_on_exception=True):
            yield span


class ParentOrAlwaysOn(Sampler):
    """``parentbased_always_on``, the default sampler, in fewer steps than the SDK's: a span is
    sampled when its parent is, and a root always. (A sampler's result carries the span's
    attributes: the SDK sets those, not the ones given to ``start_span``.)"""

    def should_sample(
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: Any = None,
        attributes: Any = None,
        links: Any = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        parent = trace.get_current_span(parent_context).get_span_context()
        if not parent.is_valid:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)
        if not parent.trace_flags.sampled:
            return SamplingResult(Decision.DROP, None, parent.trace_state)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, parent.trace_state)

    def get_description(self) -> str:
        return "ParentBased{root:AlwaysOnSampler}"


def exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    """The span exporters ``OTEL_TRACES_EXPORTER`` names (comma-separated; ``otlp`` when unset)."""
    found: list[SpanExporter] = []
    for name in filter(
        None, (part.strip().lower() for part in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(","))
    ):
        if name == "otlp":
            found.append(_otlp(environ))
        elif name == "console":
            found.append(ConsoleSpanExporter())
        elif name != "none":
            raise ValueError(f"OTEL_TRACES_EXPORTER={name!r}: inferd exports traces to otlp, console or none")
    return found


def _otlp(environ: Mapping[str, str]) -> SpanExporter:
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter()
    raise ValueError(f"OTLP protocol {protocol!r}: inferd exports traces over http/protobuf or grpc")
