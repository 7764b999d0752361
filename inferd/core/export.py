"""Where finished spans go: a `Sink` per exporter keeps them in a queue and a background thread
encodes and sends them in batches, so a request only appends. When the queue is full, spans are
dropped and counted (a warning at most every 10 s), never waited for.

Exporters, as ``OTEL_TRACES_EXPORTER`` names them: ``otlp`` over HTTP/protobuf (`OtlpHttp`, the
standard library's http.client on one kept-alive connection) or gRPC (`OtlpGrpc`, a raw unary call
of ``TraceService/Export`` with grpcio), both sending the bytes `inferd.core.otlp` encodes; and
``console``, one JSON object a line on stdout. Batching follows the ``OTEL_BSP_*`` variables.
"""

from __future__ import annotations

import atexit
import gzip
import http.client
import json
import logging
import os
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from inferd.core.otlp import Encoder
from inferd.core.spans import Span

log = logging.getLogger("inferd.tracing")
WARN_EVERY = 10.0  # seconds between warnings about dropped or failed spans
OTLP_TRACES_PATH = "/v1/traces"
GRPC_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Exporter(Protocol):
    """Sends one batch of encoded spans; raises when it could not."""

    def send(self, items: list[Any]) -> None: ...


class Sink:
    """Spans for one exporter. The request path only appends a finished span to a deque (`add`, a
    C call); a daemon thread, awake every ``POLL`` seconds, drops what is over ``max_queue`` (counted),
    and encodes and sends ``max_batch`` at a time: as soon as that many wait, and everything every
    ``delay`` seconds."""

    POLL = 0.05  # seconds between the thread's looks at the queue

    def __init__(
        self,
        exporter: Exporter,
        encode: Callable[[Span], Any],
        delay: float = 5.0,
        max_queue: int = 2048,
        max_batch: int = 512,
    ) -> None:
        self.exporter, self.encode = exporter, encode
        self.delay, self.max_queue, self.max_batch = delay, max_queue, max(1, min(max_batch, max_queue))
        self.dropped = self.failed = self.sent = 0
        self._queue: deque[Span] = deque()
        #: What the request path calls with each finished, sampled span.
        self.add: Callable[[Span], None] = self._queue.append
        self._stop = threading.Event()
        self._warned_at, self._warned = 0.0, 0
        self._thread = threading.Thread(target=self._run, name="inferd-span-export", daemon=True)
        self._thread.start()

    def flush(self) -> None:
        """Send everything queued (in the calling thread)."""
        while self._queue:
            self._send_batch()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the thread, after it sent what is queued (or ``timeout`` passed)."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        sent_at = time.monotonic()
        while not self._stop.wait(min(self.POLL, self.delay)):
            self._trim()
            now = time.monotonic()
            if now - sent_at >= self.delay:
                self.flush()
                sent_at = now
            while len(self._queue) >= self.max_batch:
                self._send_batch()
            self._warn()
        self._trim()
        self.flush()

    def _trim(self) -> None:
        """Drop the newest spans over ``max_queue``: the request path never waits for the exporter."""
        queue = self._queue
        for _ in range(len(queue) - self.max_queue):
            queue.pop()
            self.dropped += 1

    def _send_batch(self) -> None:
        queue = self._queue
        count = min(len(queue), self.max_batch)
        if not count:
            return
        encode = self.encode
        batch = [encode(queue.popleft()) for _ in range(count)]
        try:
            self.exporter.send(batch)
            self.sent += count
        except Exception as exc:
            self.failed += count
            if self._stop.is_set() or time.monotonic() - self._warned_at > WARN_EVERY:
                self._warned_at = time.monotonic()
                log.warning("tracing: %d spans not exported: %s", count, exc or type(exc).__name__)

    def _warn(self) -> None:
        """A warning about spans dropped since the last one, at most every 10 s."""
        now = time.monotonic()
        if self.dropped != self._warned and now - self._warned_at > WARN_EVERY:
            log.warning("tracing: %d spans dropped (queue full)", self.dropped - self._warned)
            self._warned_at, self._warned = now, self.dropped


@dataclass(frozen=True)
class Destination:
    """Where and how an OTLP exporter sends: the ``OTEL_EXPORTER_OTLP_*`` variables' values."""

    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 10.0  # seconds, as OpenTelemetry's Python exporters read OTEL_EXPORTER_OTLP_TIMEOUT
    compression: str = ""  # or gzip


class OtlpHttp:
    """OTLP/HTTP with protobuf bodies: one ``POST`` per batch on a kept-alive connection (made again
    after an error)."""

    def __init__(self, encoder: Encoder, to: Destination, context: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(to.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"OTLP endpoint {to.endpoint!r}: an http:// or https:// URL")
        self.encoder, self.timeout, self.compression = encoder, to.timeout, to.compression
        self.secure, self.context = parts.scheme == "https", context
        self.host, self.port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers = {**to.headers, "Content-Type": "application/x-protobuf"}
        if to.compression == "gzip":
            self.headers["Content-Encoding"] = "gzip"
        self._connection: http.client.HTTPConnection | None = None

    def send(self, items: list[Any]) -> None:
        body = self.encoder.request(items)
        if self.compression == "gzip":
            body = gzip.compress(body, 1)
        try:
            connection = self._connection or self._connect()
            connection.request("POST", self.path, body, self.headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if not 200 <= response.status < 300:
            raise ConnectionError(f"the OTLP receiver answered {response.status} {response.reason}")

    def _connect(self) -> http.client.HTTPConnection:
        if self.secure:
            self._connection = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=self.context
            )
        else:
            self._connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class OtlpGrpc:
    """OTLP over gRPC: ``TraceService/Export`` called with the encoded request's bytes."""

    def __init__(
        self,
        encoder: Encoder,
        to: Destination,
        insecure: bool | None = None,
        certificate: bytes | None = None,
    ) -> None:
        import grpc  # only for this exporter

        endpoint = to.endpoint
        parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
        if not parts.hostname:
            raise ValueError(f"OTLP endpoint {endpoint!r}: host:port or a URL")
        target = f"{parts.hostname}:{parts.port or 4317}"
        # the OpenTelemetry exporter's rule: the scheme decides; without one, secure unless told
        plain = parts.scheme == "http" if parts.scheme in ("http", "https") else bool(insecure)
        gzipped = grpc.Compression.Gzip if to.compression == "gzip" else None
        if plain:
            self.channel = grpc.insecure_channel(target, compression=gzipped)
        else:
            credentials = grpc.ssl_channel_credentials(certificate)
            self.channel = grpc.secure_channel(target, credentials, compression=gzipped)
        self.encoder, self.timeout = encoder, to.timeout
        self.metadata = tuple((key.lower(), value) for key, value in to.headers.items())
        self._export = self.channel.unary_unary(GRPC_EXPORT)  # bytes in, bytes out

    def send(self, items: list[Any]) -> None:
        self._export(self.encoder.request(items), timeout=self.timeout, metadata=self.metadata)


class Console:
    """One JSON object a line on stdout (``OTEL_TRACES_EXPORTER=console``), for looking at spans."""

    def send(self, items: list[Any]) -> None:
        sys.stdout.write("".join(f"{item}\n" for item in items))
        sys.stdout.flush()


def as_json(span: Span) -> str:
    """A span for the console exporter: ids in hex, times in ns."""
    document = {
        "name": span.name,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_id": span.parent_id.hex() or None,
        "kind": ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")[span.kind - 1],
        "start_time_unix_nano": span.start_ns,
        "end_time_unix_nano": span.end_ns,
        "attributes": span.attributes or {},
        "status": ("UNSET", "OK", "ERROR")[span.status],
        "links": [{"trace_id": t.hex(), "span_id": s.hex()} for t, s, _ in span.links or ()],
        "events": [
            {"name": name, "time_unix_nano": at, "attributes": a} for at, name, a in span.events or ()
        ],
    }
    return json.dumps(document, default=str)


def sinks(environ: Mapping[str, str], encoder: Encoder) -> list[Sink]:
    """The sinks ``OTEL_TRACES_EXPORTER`` names (comma-separated; ``otlp`` when unset), each flushed
    when the process exits."""
    found = []
    names = filter(
        None, (part.strip().lower() for part in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(","))
    )
    for name in names:
        if name == "otlp":
            found.append(_sink(environ, otlp(environ, encoder), encoder.span))
        elif name == "console":
            found.append(_sink(environ, Console(), as_json))
        elif name != "none":
            raise ValueError(f"OTEL_TRACES_EXPORTER={name!r}: inferd exports traces to otlp, console or none")
    for sink in found:
        atexit.register(sink.shutdown)
    return found


def _sink(environ: Mapping[str, str], exporter: Exporter, encode: Callable[[Span], Any]) -> Sink:
    def number(name: str, default: int) -> int:
        value = environ.get(name, "").strip()
        try:
            return int(value) if value else default
        except ValueError:
            raise ValueError(f"{name}={value!r}: a whole number") from None

    delay = number("OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000
    return Sink(
        exporter,
        encode,
        delay,
        number("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
        number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
    )


def otlp(environ: Mapping[str, str], encoder: Encoder) -> Exporter:
    """The OTLP exporter the ``OTEL_EXPORTER_OTLP_*`` variables describe (the ``TRACES_`` ones first)."""

    def setting(name: str) -> str:
        return (
            environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
            or environ.get(f"OTEL_EXPORTER_OTLP_{name}")
            or ""
        ).strip()

    protocol = setting("PROTOCOL") or "http/protobuf"
    compression = setting("COMPRESSION").lower()
    if compression not in ("", "none", "gzip"):
        raise ValueError(f"OTLP compression {compression!r}: gzip or none")

    def destination(endpoint: str) -> Destination:
        return Destination(
            endpoint, _headers(setting("HEADERS")), float(setting("TIMEOUT") or 10), compression
        )

    certificate = setting("CERTIFICATE")
    if protocol == "grpc":
        insecure = setting("INSECURE").lower()
        cert = Path(certificate).read_bytes() if certificate else None
        return OtlpGrpc(
            encoder, destination(setting("ENDPOINT") or "http://localhost:4317"), _flag(insecure), cert
        )
    if protocol == "http/protobuf":
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        if not endpoint:  # the generic endpoint is a base: the signal's path goes after it
            base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
            endpoint = base.rstrip("/") + OTLP_TRACES_PATH
        context = None
        if certificate or setting("CLIENT_CERTIFICATE"):
            context = ssl.create_default_context(cafile=certificate or None)
            if setting("CLIENT_CERTIFICATE"):
                context.load_cert_chain(setting("CLIENT_CERTIFICATE"), setting("CLIENT_KEY") or None)
        return OtlpHttp(encoder, destination(endpoint), context)
    raise ValueError(f"OTLP protocol {protocol!r}: inferd exports traces over http/protobuf or grpc")


def _headers(text: str) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value,...`` with URL-encoded values."""
    found = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        key, _, value = pair.partition("=")
        if key.strip():
            found[unquote(key.strip())] = unquote(value.strip())
    return found


def _flag(text: str) -> bool | None:
    return None if not text else text in ("true", "1", "yes")


def resource(environ: Mapping[str, str]) -> dict[str, Any]:
    """The resource of every span: ``OTEL_RESOURCE_ATTRIBUTES``, then ``OTEL_SERVICE_NAME`` (``inferd``
    when neither names the service), and the SDK attributes OpenTelemetry's SDKs set."""
    attributes: dict[str, Any] = {
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "inferd",
        "process.pid": os.getpid(),
    }
    attributes.update(_headers(environ.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    service = environ.get("OTEL_SERVICE_NAME", "").strip()
    if service:
        attributes["service.name"] = service
    attributes.setdefault("service.name", "inferd")
    return attributes
