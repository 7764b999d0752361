"""inferd's own spans without a server: W3C ``traceparent`` in and out, the samplers, the hand-written
OTLP encoder read back by opentelemetry-proto's own classes, the export queue's bound, and spans made
with the OpenTelemetry API. The exporters send to real receivers on loopback (tests/otlp.py), over
HTTP and gRPC."""

from __future__ import annotations

import asyncio
from contextlib import AbstractContextManager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from opentelemetry.trace import StatusCode

from inferd.core import export
from inferd.core.otel import ApiSpan, ApiTracer
from inferd.core.otlp import Encoder
from inferd.core.spans import CLIENT, SERVER, TRACESTATE_LIMIT, Sampler, Span, current, remote
from inferd.core.tracer import SpanTracer
from tests.otlp import Receiver, otlp_grpc_receiver, otlp_receiver

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (f"00-{TRACE}-{PARENT}-01", (TRACE, PARENT, True)),
        (f"00-{TRACE}-{PARENT}-00", (TRACE, PARENT, False)),
        (f"01-{TRACE}-{PARENT}-03-what-comes-later", (TRACE, PARENT, True)),  # a later version: read
        (f"00-{TRACE}-{PARENT}-01-extra", None),  # version 00 has exactly four parts
        (f"ff-{TRACE}-{PARENT}-01", None),
        (f"00-{'0' * 32}-{PARENT}-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"00-{TRACE[:-1]}x-{PARENT}-01", None),
        ("00-abc-def-01", None),
        ("", None),
        (None, None),
    ],
)
def test_a_traceparent_is_read_as_the_w3c_recommendation_says(
    header: str | None, expected: tuple[str, str, bool] | None
) -> None:
    parent = remote(header, "vendor=1")
    found = None if parent is None else (parent.trace_id.hex(), parent.span_id.hex(), parent.sampled)
    assert found == expected
    if parent is not None:
        assert parent.trace_state == "vendor=1"


def test_a_tracestate_beyond_the_w3c_limit_is_not_passed_on() -> None:
    longest = ",".join(["k" * 250 + "=12345"] * 32)  # 32 entries of 256 characters
    assert len(longest) == TRACESTATE_LIMIT
    kept = remote(f"00-{TRACE}-{PARENT}-01", longest)
    assert kept is not None and kept.trace_state == longest
    dropped = remote(f"00-{TRACE}-{PARENT}-01", longest + ",k=1")
    assert dropped is not None and dropped.trace_state == ""
    assert dropped.trace_id.hex() == TRACE  # the parent itself still holds


def collected() -> tuple[SpanTracer, list[Span]]:
    spans: list[Span] = []
    return SpanTracer((spans.append,)), spans


def test_a_request_span_continues_the_callers_trace_and_passes_it_on() -> None:
    tracer, spans = collected()
    attributes: dict[str, Any] = {"url.path": "/x"}
    with tracer.server("POST /x", "http", f"00-{TRACE}-{PARENT}-01", "vendor=1", attributes) as request:
        tracer.model("iris", "rest")
        assert tracer.step("inferd.decode", len, "four") == 4
        with tracer.client("POST /predict", {"inferd.node": "remote"}) as headers:
            client = current.get()
        tracer.finish(request, status=503)
    assert client is not None
    assert headers == {"traceparent": f"00-{TRACE}-{client.span_id.hex()}-01", "tracestate": "vendor=1"}
    assert [span.name for span in spans] == ["inferd.decode", "POST /predict", "POST /x"]
    assert {span.trace_id.hex() for span in spans} == {TRACE}
    assert (request.kind, request.parent_id.hex(), request.status) == (SERVER, PARENT, 2)
    assert request.attributes == {
        "url.path": "/x",
        "inferd.protocol": "rest",
        "inferd.model": "iris",
        "http.response.status_code": 503,
    }
    assert [span.parent_id for span in spans[:2]] == [request.span_id] * 2
    assert spans[1].kind == CLIENT
    assert current.get() is None


def test_an_unsampled_caller_gets_no_spans_and_its_callees_hear_so() -> None:
    tracer, spans = collected()
    with tracer.server("POST /x", "http", f"00-{TRACE}-{PARENT}-00", None, {}):
        with tracer.span("inferd.model"), tracer.client("POST /predict", {}) as headers:
            pass
    assert spans == []
    assert headers["traceparent"].startswith(f"00-{TRACE}-") and headers["traceparent"].endswith("-00")


def test_a_batch_links_each_request_and_ends_their_waits() -> None:
    tracer, spans = collected()
    waiting = []
    for _ in range(2):
        with tracer.server("POST /x", "http", None, None, {}), tracer.span("inferd.model"):
            waiting.append(tracer.waiting())
    requests = [span for span in spans if span.name == "POST /x"]
    with tracer.batch(waiting, 3) as batch:
        pass
    waits = [span for span in spans if span.name == "inferd.batch.wait"]
    models = [span for span in spans if span.name == "inferd.model"]
    assert [wait.parent_id for wait in waits] == [model.span_id for model in models]
    assert batch.parent_id == b"" and batch.trace_id not in {request.trace_id for request in requests}
    assert batch.links == [(request.trace_id, request.span_id, "") for request in requests]
    assert batch.attributes == {"inferd.batch.requests": 2, "inferd.batch.size": 3}


def test_an_exception_is_recorded_on_the_span_it_left() -> None:
    tracer, spans = collected()

    def broken() -> None:
        raise ValueError("no tensor 'x'")

    with pytest.raises(ValueError), tracer.server("POST /x", "http", None, None, {}):
        tracer.step("inferd.decode", broken)
    decode, request = spans
    for span in spans:
        assert span.status == 2
        assert span.events is not None
        ((_, event, attributes),) = span.events
        assert (event, attributes["exception.type"], attributes["exception.message"]) == (
            "exception",
            "ValueError",
            "no tensor 'x'",
        )
    assert decode.parent_id == request.span_id


def test_samplers() -> None:
    low, high = bytes(8) + (1).to_bytes(8, "big"), bytes(8) + (2**64 - 1).to_bytes(8, "big")
    sampled_parent = remote(f"00-{TRACE}-{PARENT}-01")
    unsampled_parent = remote(f"00-{TRACE}-{PARENT}-00")
    ratio = Sampler("traceidratio", "0.5")
    assert (ratio.sampled(low, None), ratio.sampled(high, None)) == (True, False)
    assert ratio.sampled(high, sampled_parent) is False  # not parent-based: the trace id decides
    based = Sampler("parentbased_traceidratio", "0.5")
    assert based.sampled(high, sampled_parent) is True
    assert based.sampled(low, unsampled_parent) is False
    assert Sampler.from_environment({}).sampled(high, None) is True  # parentbased_always_on
    assert Sampler("always_off").sampled(low, None) is False
    assert Sampler("always_on").sampled(high, unsampled_parent) is True
    with pytest.raises(ValueError, match="OTEL_TRACES_SAMPLER"):
        Sampler("jaeger_remote")


def decoded(encoder: Encoder, spans: list[Span]) -> ExportTraceServiceRequest:
    body = encoder.request(encoder.span(span) for span in spans)
    return ExportTraceServiceRequest.FromString(body)


def test_the_encoder_writes_what_opentelemetry_proto_reads() -> None:
    tracer, spans = collected()
    attributes = {"s": "é", "b": True, "i": -3, "f": 0.5, "l": ["a", 1], "one": 1}
    with tracer.server("POST /x", "http", f"00-{TRACE}-{PARENT}-01", "k=v", attributes) as request:
        pass
    with tracer.batch([(request, 5)], 1) as batch:
        batch.fail("broken")
    resource = {"service.name": "iris", "process.pid": 42}
    encoder = Encoder(resource, "inferd", "9.9")
    encoded = [encoder.span(span) for span in spans]
    request.attributes = {**attributes, "one": 1.0, "b": 1}  # equal to Python, not in OTLP: not cached
    encoded.append(encoder.span(request))
    message = ExportTraceServiceRequest.FromString(encoder.request(encoded))
    (resource_spans,) = message.resource_spans
    assert {
        a.key: a.value.string_value or a.value.int_value for a in resource_spans.resource.attributes
    } == resource
    (scope_spans,) = resource_spans.scope_spans
    assert (scope_spans.scope.name, scope_spans.scope.version) == ("inferd", "9.9")
    first, wait, linked, again = scope_spans.spans
    assert (wait.name, wait.parent_span_id, wait.start_time_unix_nano) == (
        "inferd.batch.wait",
        request.span_id,
        5,
    )
    assert (first.name, first.kind, first.trace_id.hex(), first.parent_span_id.hex()) == (
        "POST /x",
        SpanMessage.SPAN_KIND_SERVER,
        TRACE,
        PARENT,
    )
    assert (first.span_id, first.trace_state) == (request.span_id, "k=v")
    assert (first.start_time_unix_nano, first.end_time_unix_nano) == (request.start_ns, request.end_ns)
    values = {a.key: a.value for a in first.attributes}
    assert values["s"].string_value == "é" and values["b"].bool_value is True
    assert values["i"].int_value == -3 and values["f"].double_value == 0.5
    assert [v.string_value or v.int_value for v in values["l"].array_value.values] == ["a", 1]
    assert values["one"].WhichOneof("value") == "int_value"
    assert values["inferd.protocol"].string_value == "http"
    again_values = {a.key: a.value for a in again.attributes}
    assert again_values["one"].WhichOneof("value") == "double_value"
    assert again_values["b"].WhichOneof("value") == "int_value"
    (link,) = linked.links
    assert (link.trace_id, link.span_id, link.trace_state) == (request.trace_id, request.span_id, "k=v")
    assert (linked.parent_span_id, linked.kind) == (b"", SpanMessage.SPAN_KIND_INTERNAL)
    assert (linked.status.code, linked.status.message) == (Status.STATUS_CODE_ERROR, "broken")
    assert {a.key: a.value.int_value for a in linked.attributes} == {
        "inferd.batch.requests": 1,
        "inferd.batch.size": 1,
    }


def test_the_encoder_writes_events_and_long_spans() -> None:
    tracer, spans = collected()
    with pytest.raises(RuntimeError), tracer.span("x" * 20000):
        raise RuntimeError("gone")
    (span,) = decoded(Encoder({}, "inferd", "1"), spans).resource_spans[0].scope_spans[0].spans
    assert len(span.name) == 20000
    (event,) = span.events
    assert event.name == "exception" and event.time_unix_nano == spans[0].events[0][0]  # type: ignore[index]
    assert {a.key: a.value.string_value for a in event.attributes}["exception.message"] == "gone"


class Kept:
    def __init__(self) -> None:
        self.batches: list[list[Any]] = []

    def send(self, items: list[Any]) -> None:
        self.batches.append(items)


class Idle(export.Sink):
    POLL = 60.0  # the thread looks only when shut down: what the queue held then is certain


def test_a_full_queue_drops_spans_and_counts_them() -> None:
    kept = Kept()
    sink = Idle(kept, lambda span: span.name, delay=60, max_queue=4, max_batch=3)
    tracer = SpanTracer((sink.add,))
    for index in range(10):
        tracer.span(f"s{index}").end()
    sink.shutdown()
    assert kept.batches == [["s0", "s1", "s2"], ["s3"]]
    assert (sink.sent, sink.dropped, sink.failed) == (4, 6, 0)


@pytest.mark.parametrize("receiver", [otlp_receiver, otlp_grpc_receiver], ids=["http", "grpc"])
def test_spans_reach_an_otlp_receiver(receiver: Any) -> None:
    opened: AbstractContextManager[Receiver] = receiver()
    with opened as found:
        protocol = "grpc" if receiver is otlp_grpc_receiver else "http/protobuf"
        environ = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": found.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=a%20b",
            "OTEL_SERVICE_NAME": f"unit-{protocol}",
            "OTEL_BSP_SCHEDULE_DELAY": "20",
        }
        tracer = SpanTracer.from_environment(environ)
        with (
            tracer.server("POST /x", "http", f"00-{TRACE}-{PARENT}-01", None, {}),
            tracer.span("inferd.model"),
        ):
            pass
        spans = found.wait_for(lambda spans: len(spans) == 2)
        for sink in tracer.kept:
            sink.shutdown()
    assert {(span.service, span.name, span.trace_id) for span in spans} == {
        (f"unit-{protocol}", "POST /x", TRACE),
        (f"unit-{protocol}", "inferd.model", TRACE),
    }


def test_exporters_and_protocols_outside_what_inferd_speaks_are_refused() -> None:
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER"):
        export.sinks({"OTEL_TRACES_EXPORTER": "zipkin"}, Encoder({}, "inferd", "1"))
    with pytest.raises(ValueError, match="http/json"):
        export.otlp({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, Encoder({}, "inferd", "1"))
    with pytest.raises(ValueError, match="OTEL_PROPAGATORS"):
        SpanTracer.from_environment({"OTEL_PROPAGATORS": "b3", "OTEL_TRACES_EXPORTER": "none"})


def test_spans_made_with_the_opentelemetry_api_join_the_request() -> None:
    tracer, spans = collected()
    api = ApiTracer(tracer)
    with (
        tracer.server("POST /x", "http", f"00-{TRACE}-{PARENT}-01", None, {}),
        tracer.span("inferd.model") as model,
        api.start_as_current_span("user.work", attributes={"rows": 3, "tags": ("a", "b")}) as work,
    ):
        assert trace.get_current_span() is work
        with api.start_as_current_span("user.inner"):
            pass
        work.add_event("checkpoint", {"n": 1})
        work.set_status(StatusCode.ERROR, "bad rows")

    @api.start_as_current_span("user.decorated")
    async def decorated() -> trace.Span:
        return trace.get_current_span()

    assert isinstance(asyncio.run(decorated()), ApiSpan)
    by_name = {span.name: span for span in spans}
    inner, outer = by_name["user.inner"], by_name["user.work"]
    assert {span.trace_id.hex() for span in (inner, outer, model)} == {TRACE}
    assert (inner.parent_id, outer.parent_id) == (outer.span_id, model.span_id)
    assert outer.attributes == {"rows": 3, "tags": ["a", "b"]}
    assert (outer.status, outer.status_message) == (2, "bad rows")
    assert [(name, attributes) for _, name, attributes in outer.events or ()] == [("checkpoint", {"n": 1})]
    assert by_name["user.decorated"].parent_id == b""  # outside any request: a trace of its own
