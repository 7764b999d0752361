"""OTLP trace receivers on loopback, over HTTP (``POST /v1/traces``) and gRPC (``TraceService/Export``):
the bodies are decoded with opentelemetry-proto's ``ExportTraceServiceRequest`` (the real protobuf)
into `Span` records."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage

KINDS = {value: name.removeprefix("SPAN_KIND_") for name, value in SpanMessage.SpanKind.items()}


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    kind: str  # SERVER, CLIENT, INTERNAL...
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    attributes: dict[str, Any]
    links: tuple[tuple[str, str], ...]  # (trace id, span id)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


class Receiver:
    """The spans received so far, from any number of servers."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        self.url = ""

    def add(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        found = []
        for resource in request.resource_spans:
            service = next(
                (_value(a.value) for a in resource.resource.attributes if a.key == "service.name"), ""
            )
            for scope in resource.scope_spans:
                for span in scope.spans:
                    found.append(
                        Span(
                            service,
                            span.name,
                            KINDS[span.kind],
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            {a.key: _value(a.value) for a in span.attributes},
                            tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                        )
                    )
        with self.lock:
            self.spans.extend(found)

    def wait_for(self, found: Callable[[list[Span]], bool], timeout: float = 15.0) -> list[Span]:
        """The spans once ``found`` says they are all there (an AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = list(self.spans)
            if found(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans not received in {timeout}s; got {[s.name for s in spans]}")
            time.sleep(0.05)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            receiver.add(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def otlp_grpc_receiver() -> Iterator[Receiver]:
    """A receiver whose ``url`` is a gRPC endpoint (``http://127.0.0.1:PORT``) answering
    ``opentelemetry.proto.collector.trace.v1.TraceService/Export``."""
    receiver = Receiver()

    def export(body: bytes, context: Any) -> bytes:
        receiver.add(body)
        return bytes(ExportTraceServiceResponse().SerializeToString())

    server = grpc.server(ThreadPoolExecutor(2))
    service = "opentelemetry.proto.collector.trace.v1.TraceService"
    handler = grpc.unary_unary_rpc_method_handler(export)  # no (de)serializers: bytes in and out
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {"Export": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        server.stop(None)


def otel_env(receiver: Receiver, service: str) -> dict[str, str]:
    """A server's environment exporting its spans to ``receiver`` at once (a 50 ms batch delay)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": service,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
