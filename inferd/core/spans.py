"""inferd's own span records: what a traced request costs on its path. A span is one small object
(slots, ids as bytes, times from ``time.time_ns``) that is also its own context manager, current
(a contextvar) while its block runs. Ending it hands it to the process's sinks (`inferd.core.export`),
which encode it for OTLP; nothing of the OpenTelemetry SDK runs per request.

Sampling is decided once per trace in this process, where a span has no parent here (a remote
caller's ``traceparent`` or none): its children inherit the decision, as they do under every sampler
OpenTelemetry defines (a ratio sampler gives a trace's spans one answer, by the trace id). An
unsampled span still carries its context, so what it calls hears ``-00`` and samples nothing either.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER = 1, 2, 3, 4, 5  # OTLP's SpanKind numbers
UNSET, OK, ERROR = 0, 1, 2  # OTLP's StatusCode numbers

#: Where finished, sampled spans go (`inferd.core.export.Sink`'s queue); set when tracing is configured.
Sinks = tuple[Callable[["Span"], None], ...]

# Ids need to be unique, not secret: the Mersenne Twister's bits, far cheaper than os.urandom per span
# (random reseeds itself in a forked child). Bound once: every name looked up costs on the request path.
_bits = random.getrandbits
_now = time.time_ns


class Span:
    """One span. ``with span:`` makes it current and ends it (recording an exception, if any);
    ``span.end()`` ends one that never was current. `root` is the span of the request it serves in
    this process (the one that gets the model's name, and that batches link to); a span holds it in
    ``above``, None in the request's span itself: a reference to itself would be a cycle, which only
    the garbage collector frees, and full collections of a server's heap cost every request. What
    few spans have (links, events, an error status) lives in the instance's dict, made only when one
    is set."""

    __slots__ = (
        "__dict__",
        "_token",
        "above",
        "attributes",
        "end_ns",
        "kind",
        "name",
        "parent_id",
        "sampled",
        "sinks",
        "span_id",
        "start_ns",
        "trace_id",
        "trace_state",
    )
    #: (trace id, span id, trace state) of each linked span.
    links: list[tuple[bytes, bytes, str]] | None = None
    #: (time, name, attributes) of each event.
    events: list[tuple[int, str, dict[str, Any]]] | None = None
    status: int = UNSET
    status_message: str = ""

    def __init__(
        self,
        sinks: Sinks,
        name: str,
        trace_id: bytes,
        parent_id: bytes,
        sampled: bool,
        kind: int = INTERNAL,
        attributes: dict[str, Any] | None = None,
        trace_state: str = "",
        above: Span | None = None,
    ) -> None:
        self.sinks, self.name, self.kind, self.sampled = sinks, name, kind, sampled
        self.trace_id, self.parent_id, self.span_id = trace_id, parent_id, _bits(64).to_bytes(8, "little")
        self.trace_state, self.attributes, self.above = trace_state, attributes, above
        self.start_ns, self.end_ns = _now(), 0
        self._token: Token[Span | None] | None = None

    def child(self, name: str, kind: int = INTERNAL, attributes: dict[str, Any] | None = None) -> Span:
        """A span under this one, in the same trace and request, sharing its sampling decision."""
        return Span(
            self.sinks,
            name,
            self.trace_id,
            self.span_id,
            self.sampled,
            kind,
            attributes,
            self.trace_state,
            self.above or self,
        )

    @property
    def root(self) -> Span:
        """The span of the request this one serves in this process."""
        return self.above or self

    def set(self, key: str, value: Any) -> None:
        """Set one attribute (a str, bool, int or float)."""
        if self.attributes is None:
            self.attributes = {}
        self.attributes[key] = value

    def fail(self, message: str = "") -> None:
        """Mark the span's operation as failed (status ERROR)."""
        self.status, self.status_message = ERROR, message

    def record(self, exc: BaseException) -> None:
        """An ``exception`` event and status ERROR, as OpenTelemetry records a raised exception."""
        description = {
            "exception.type": type(exc).__qualname__,
            "exception.message": str(exc),
            "exception.stacktrace": "".join(traceback.format_exception(exc)),
        }
        self.events = [*(self.events or ()), (time.time_ns(), "exception", description)]
        self.fail(f"{type(exc).__name__}: {exc}")

    def end(self, at: int | None = None) -> None:
        """End the span now (or ``at``, in ns since the epoch) and hand it to the sinks if sampled."""
        self.end_ns = at or _now()
        if self.sampled:
            for sink in self.sinks:
                sink(self)

    def traceparent(self) -> str:
        """This span's W3C ``traceparent``, naming it as the parent of what it calls."""
        return f"00-{self.trace_id.hex()}-{self.span_id.hex()}-{'01' if self.sampled else '00'}"

    def __enter__(self) -> Span:
        self._token = current.set(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            current.reset(self._token)
            self._token = None
        if exc is not None and self.sampled:
            self.record(exc)
        self.end()


#: The span of the code running now; None outside any traced call.
current: ContextVar[Span | None] = ContextVar("inferd_span", default=None)


class Remote:
    """The caller's span, read from a W3C ``traceparent`` (and ``tracestate``)."""

    __slots__ = ("sampled", "span_id", "trace_id", "trace_state")

    def __init__(self, trace_id: bytes, span_id: bytes, sampled: bool, trace_state: str) -> None:
        self.trace_id, self.span_id, self.sampled, self.trace_state = trace_id, span_id, sampled, trace_state


_ZERO_TRACE, _ZERO_SPAN = bytes(16), bytes(8)

#: The longest ``tracestate`` passed on: the W3C recommendation's 32 entries of up to 256 characters
#: each, with their commas; a caller's longer header is dropped, not stored in every span it parents.
TRACESTATE_LIMIT = 32 * 257 - 1


def remote(traceparent: str | None, tracestate: str | None = None) -> Remote | None:
    """The parent a ``traceparent`` names, or None when it is missing or malformed (the call then
    starts a new trace, as the W3C recommendation says)."""
    if not traceparent:
        return None
    parts = traceparent.strip().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or parts[0] == "ff" or (parts[0] == "00" and len(parts) != 4):
        return None
    version, trace, span, flags = parts[:4]
    if len(trace) != 32 or len(span) != 16 or len(flags) != 2:
        return None
    try:
        trace_id, span_id, bits = bytes.fromhex(trace), bytes.fromhex(span), int(flags, 16)
        int(version, 16)
    except ValueError:
        return None
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    state = tracestate.strip() if tracestate else ""
    return Remote(trace_id, span_id, bool(bits & 1), state if len(state) <= TRACESTATE_LIMIT else "")


class Sampler:
    """``OTEL_TRACES_SAMPLER`` (and ``_ARG``): whether a trace is sampled where it enters this
    process. ``traceidratio`` keeps traces whose low 64 bits of trace id fall under ratio x 2^64, the
    rule every OpenTelemetry SDK shares, so services agree on a trace."""

    NAMES = (
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    )

    def __init__(self, name: str = "parentbased_always_on", argument: str = "") -> None:
        if name not in self.NAMES:
            raise ValueError(
                f"OTEL_TRACES_SAMPLER={name!r}: inferd samples with one of {', '.join(self.NAMES)}"
            )
        self.parent_based = name.startswith("parentbased_")
        root = name.removeprefix("parentbased_")
        ratio = 1.0
        if root == "traceidratio":
            try:
                ratio = min(max(float(argument), 0.0), 1.0) if argument.strip() else 1.0
            except ValueError:
                raise ValueError(f"OTEL_TRACES_SAMPLER_ARG={argument!r}: a ratio from 0 to 1") from None
        elif root == "always_off":
            ratio = 0.0
        self.bound = round(ratio * _ALL)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Sampler:
        name = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
        return cls(name, environ.get("OTEL_TRACES_SAMPLER_ARG", ""))

    def sampled(self, trace_id: bytes, parent: Remote | None) -> bool:
        if parent is not None and self.parent_based:
            return parent.sampled
        return self.root(trace_id)

    def root(self, trace_id: bytes) -> bool:
        """Whether a new trace is sampled."""
        bound = self.bound
        return bound == _ALL or (bound != 0 and int.from_bytes(trace_id[8:], "big") < bound)


_ALL = 2**64


def new_trace_id() -> bytes:
    return _bits(128).to_bytes(16, "little")
