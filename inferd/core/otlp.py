"""OTLP's protobuf for traces, written by hand for the few messages a span needs (Span, KeyValue,
AnyValue, Link, Event, Status, Resource, InstrumentationScope, ScopeSpans, ResourceSpans,
ExportTraceServiceRequest: opentelemetry/proto/trace/v1/trace.proto and its neighbours).

Why by hand: building SDK objects and then protobuf messages cost tens of microseconds a span, paid
on a 2-core machine against the requests themselves. Here a span is a few byte strings joined, and
what repeats from span to span (names, attributes such as the route or the protocol) is encoded once
and kept. tests/core/test_spans.py reads the bytes back with opentelemetry-proto's own classes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from inferd.core.spans import Span
from inferd.core.varint import varint

_double = struct.Struct("<d").pack
_fixed64 = struct.Struct("<BQ").pack
# A span's fixed-size fields, each after its tag: trace_id (1), span_id (2), [parent_span_id (4),]
# kind (6), start and end times (7 and 8, fixed64)
_ROOT = struct.Struct("<2s16s2s8sBBBQBQ").pack
_CHILD = struct.Struct("<2s16s2s8s2s8sBBBQBQ").pack
_TRACE, _SPAN, _PARENT = b"\x0a\x10", b"\x12\x08", b"\x22\x08"


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): bytes, strings and messages."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def any_value(value: Any) -> bytes:
    """An AnyValue message. bool before int: a bool is an int to Python."""
    if isinstance(value, str):
        return field(1, value.encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)  # int64: two's complement in 64 bits
    if isinstance(value, float):
        return b"\x21" + _double(value)
    if isinstance(value, bytes):
        return field(7, value)
    if isinstance(value, (list, tuple)):
        return field(5, b"".join(field(1, any_value(item)) for item in value))  # ArrayValue
    return field(1, str(value).encode())


def key_value(key: str, value: Any) -> bytes:
    """A KeyValue message."""
    return field(1, key.encode()) + field(2, any_value(value))


class Encoder:
    """Spans to ``ScopeSpans.spans`` fields, with a cache of what repeats; and those fields to a whole
    ``ExportTraceServiceRequest`` for one resource and scope."""

    def __init__(self, resource: Mapping[str, Any], scope: str, version: str) -> None:
        self._resource = field(1, b"".join(field(1, key_value(k, v)) for k, v in resource.items()))
        self._scope = field(1, field(1, scope.encode()) + field(2, version.encode()))
        self._names: dict[str, bytes] = {}
        self._sets: dict[tuple[tuple[tuple[str, Any], ...], tuple[type, ...]], bytes] = {}

    def span(self, span: Span) -> bytes:
        """One span as a ``ScopeSpans.spans`` field (number 2): the fixed-size fields in one
        ``struct.pack`` (a message's fields may come in any order), then the name and the rest."""
        name = self._names.get(span.name)
        if name is None:
            _bound(self._names)
            name = self._names[span.name] = field(5, span.name.encode())
        if span.parent_id:
            fixed = _CHILD(
                _TRACE, span.trace_id, _SPAN, span.span_id, _PARENT, span.parent_id,
                0x30, span.kind, 0x39, span.start_ns, 0x41, span.end_ns,
            )  # fmt: skip
        else:
            fixed = _ROOT(
                _TRACE,
                span.trace_id,
                _SPAN,
                span.span_id,
                0x30,
                span.kind,
                0x39,
                span.start_ns,
                0x41,
                span.end_ns,
            )
        if span.attributes:
            name += self._attributes(span.attributes)
        if span.trace_state or span.status or span.events or span.links:
            name += self._rare(span)
        size = len(fixed) + len(name)
        return (_PREFIXES[size] if size < _PREFIXED else b"\x12" + varint(size)) + fixed + name

    def _rare(self, span: Span) -> bytes:
        """What few spans have: a trace state, events, links, an error status."""
        parts = []
        if span.trace_state:
            parts.append(field(3, span.trace_state.encode()))
        if span.events:
            parts += (field(11, self._event(*event)) for event in span.events)
        if span.links:
            parts += (field(13, self._link(*link)) for link in span.links)
        if span.status:
            status = field(2, span.status_message.encode()) if span.status_message else b""
            parts.append(field(15, status + b"\x18" + bytes((span.status,))))
        return b"".join(parts)

    def request(self, spans: Iterable[bytes]) -> bytes:
        """An ``ExportTraceServiceRequest`` of encoded spans (`span`'s results)."""
        scope_spans = field(2, self._scope + b"".join(spans))
        return field(1, self._resource + scope_spans)

    def _attributes(self, attributes: Mapping[str, Any]) -> bytes:
        """The span's attributes (Span field 9), encoded once per distinct set: the spans of one route
        share theirs. The values' types are part of the key: 1, 1.0 and True are equal to Python."""
        try:
            key = (tuple(attributes.items()), tuple(map(type, attributes.values())))
            found = self._sets.get(key)
        except TypeError:  # a list among the values: not kept
            return b"".join(field(9, key_value(k, v)) for k, v in attributes.items())
        if found is None:
            _bound(self._sets)
            found = self._sets[key] = b"".join(field(9, key_value(k, v)) for k, v in attributes.items())
        return found

    def _event(self, time_ns: int, name: str, attributes: Mapping[str, Any]) -> bytes:
        encoded = [_fixed64(0x09, time_ns), field(2, name.encode())]
        encoded += (field(3, key_value(key, value)) for key, value in attributes.items())
        return b"".join(encoded)

    @staticmethod
    def _link(trace_id: bytes, span_id: bytes, trace_state: str) -> bytes:
        state = field(3, trace_state.encode()) if trace_state else b""
        return b"\x0a\x10" + trace_id + b"\x12\x08" + span_id + state


_PREFIXED = 4096  # spans shorter than this (nearly all) take their field's tag and length from a table
_PREFIXES = [b"\x12" + varint(size) for size in range(_PREFIXED)]
CACHE_LIMIT = 4096  # entries per cache; cleared when full (routes with ids in them would grow it)


def _bound(cache: dict[Any, bytes]) -> None:
    if len(cache) >= CACHE_LIMIT:
        cache.clear()
