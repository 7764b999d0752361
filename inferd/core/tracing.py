"""Distributed tracing's one switch: ``tracer`` is None (tracing off, the default) or the process's
`Tracer`, which `configure` loads from `inferd.core.tracer` (inferd's own spans, exported over OTLP
without the OpenTelemetry SDK).
Code on the request path checks ``tracing.tracer is not None`` once and does nothing more when it is
None: with tracing off none of the tracing modules (nor anything of OpenTelemetry) is imported.

Tracing is on when the ``tracing`` setting is (``--tracing``, ``INFERD_TRACING=true``), or when the
environment asks for traces the standard way: ``OTEL_TRACES_EXPORTER`` set to an exporter (not
``none``) or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set. ``OTEL_EXPORTER_OTLP_ENDPOINT`` alone does
not turn it on (it is often set for metrics and logs too), and ``OTEL_SDK_DISABLED=true`` keeps it off.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Tracer(Protocol):
    """What the request path asks of tracing (`inferd.core.tracer.SpanTracer` implements it)."""

    def server(
        self,
        name: str,
        protocol: str,
        traceparent: str | None,
        tracestate: str | None,
        attributes: dict[str, Any],
    ) -> AbstractContextManager[Any]:
        """The span of one received call, a child of the caller's ``traceparent`` (from the request's
        headers or metadata), current while the block runs; the block gets a handle to pass to
        `finish`. ``attributes`` becomes the span's own (the caller makes a new dict per call)."""

    def finish(self, span: Any, status: int | None = None, grpc_code: str | None = None) -> None:
        """Record a request span's outcome: its HTTP status or its gRPC status code name."""

    def model(self, name: str, protocol: str) -> None:
        """Name the model and protocol of the current request (the data plane knows them)."""

    def span(self, name: str) -> AbstractContextManager[Any]:
        """An internal span, a child of the current one and current while the block runs."""

    def step(self, name: str, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` within an internal span ``name`` (decode, encode)."""

    def client(self, name: str, attributes: Mapping[str, Any]) -> AbstractContextManager[dict[str, str]]:
        """A client span for a call to another server; the block gets the headers (``traceparent``)
        to send with it, naming that span as the callee's parent."""

    def waiting(self) -> Any:
        """An opaque token for a request that starts waiting for a batch (`batch` takes it)."""

    def batch(self, waiting: list[Any], size: int) -> AbstractContextManager[Any]:
        """The span of one batch's model call: each request's wait span ends, and the batch span,
        current while the block runs, links to each request's span."""


#: The process's tracer, None while tracing is off.
tracer: Tracer | None = None


def wanted(setting: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether tracing is on, by the ``tracing`` setting and the standard ``OTEL_*`` variables."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    return setting or exporter not in ("", "none") or bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure(setting: bool) -> Tracer | None:
    """Turn tracing on in this process when `wanted` (once: the tracer is kept); the tracing modules
    are imported only then. With the OpenTelemetry API installed (the ``tracing`` extra), the spans a
    model makes with it join inferd's (`inferd.core.otel`)."""
    global tracer
    if tracer is None and wanted(setting):
        made = importlib.import_module("inferd.core.tracer").SpanTracer.from_environment()
        try:
            bridge = importlib.import_module("inferd.core.otel")
        except ModuleNotFoundError as exc:  # no OpenTelemetry API: no model code can make spans with it
            if not (exc.name or "").startswith("opentelemetry"):
                raise
        else:
            bridge.install(made)
        tracer = made
    return tracer
