"""Payload log events as KServe's logger sends them: CloudEvents 1.0 in HTTP binary mode.

The event's payload is the POST's body, untouched, its ``Content-Type`` the payload's own (the
CloudEvent's ``datacontenttype``); every attribute is a ``ce-`` header: ``ce-specversion`` 1.0,
``ce-id`` the call's request id (its request and response events share it), ``ce-type``
``org.kubeflow.serving.inference.request`` or ``.response``, ``ce-source``, ``ce-time`` (RFC 3339, UTC),
and KServe's extensions: ``ce-inferenceservicename`` (the model), ``ce-namespace``, ``ce-component``
(``predictor``) and ``ce-endpoint`` (empty: inferd has no canary), plus the event's own extensions.
Attribute values are percent-encoded as the HTTP binding asks (3.1.3.2: space, ``"``, ``%`` and
everything outside printable ASCII, as UTF-8), so an id taken from a client's ``X-Request-ID`` or a
V2 body arrives as it was sent (tests/fuzz/test_cloudevents_reference.py checks it against the SDK).
"""

from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from inferd.core.context import request_id
from inferd.core.payloads import KINDS, REQUEST, Connect, Event, Exchange, PayloadLog

if TYPE_CHECKING:
    from inferd.protocols.poster import Poster

Message = Any  # a protobuf message; protobuf's generated classes carry no usable hints

TYPES = {REQUEST: "org.kubeflow.serving.inference.request"}
RESPONSE_TYPE = "org.kubeflow.serving.inference.response"
COMPONENT = "predictor"
#: The content type of a gRPC message logged as its protobuf bytes: KServe logs only REST's JSON.
PROTOBUF = "application/x-protobuf; messageType={}"
#: Header lines an event has without extensions.
LINES = 10
#: What a ce- header value may hold as it is: printable ASCII but space, ``"`` and ``%``.
_SAFE = "".join(chr(code) for code in range(0x21, 0x7F) if chr(code) not in '"%')
_UNSAFE = re.compile(r"[^!#$&-~]")


def header_value(value: str) -> str:
    """``value`` percent-encoded as a ce- header value (the binding's 3.1.3.2); UnicodeError for
    a lone surrogate (no UTF-8 for it)."""
    return value if _UNSAFE.search(value) is None else quote(value, safe=_SAFE)


def sender(namespace: str, port: int) -> Connect:
    """What sends a log's events as CloudEvents from the server on HTTP ``port`` in ``namespace``:
    one POST each (pipelined over a few kept-alive connections)."""
    encode = encoder(namespace, port)

    def connect(log: PayloadLog) -> Poster[Event]:
        # imported only for a server that logs payloads: the others never load the sender
        from inferd.protocols.poster import Poster

        return Poster(log.url, log.timeout, encode, log.answered, log.failed)

    return connect


def encoder(namespace: str, port: int) -> Callable[[Event], tuple[bytes, bytes]]:
    """An event's header lines (its attributes) and body, sent in ``namespace`` by the server on
    HTTP ``port``. Raises ValueError for a content type no header can hold (a line break),
    UnicodeError for one beyond Latin-1 or an attribute with a lone surrogate."""
    fixed = (
        f"ce-source: {header_value(default_source(port))}\r\nce-namespace: {header_value(namespace)}\r\n"
        f"ce-component: {COMPONENT}\r\nce-endpoint: \r\n"
    )
    types = {kind: f"ce-type: {TYPES.get(kind, RESPONSE_TYPE)}\r\n" for kind in KINDS}

    def encode(event: Event) -> tuple[bytes, bytes]:
        head = (
            f"content-type: {event.content_type}\r\nce-specversion: 1.0\r\n"
            f"ce-id: {header_value(event.id)}\r\n"
            f"{types[event.kind]}ce-time: {rfc3339(event.time)}\r\n"
            f"ce-inferenceservicename: {header_value(event.model)}\r\n{fixed}"
        )
        lines = LINES
        if event.extensions:
            head += "".join(f"ce-{name}: {header_value(value)}\r\n" for name, value in event.extensions)
            lines += len(event.extensions)
        if head.count("\n") != lines or head.count("\r") != lines:
            raise ValueError("a line break in an attribute")
        return head.encode("latin-1"), event.body

    return encode


def default_source(port: int) -> str:
    """Where events say they come from: this host's name and the server's HTTP port."""
    return f"http://{socket.gethostname()}:{port}/"


def rfc3339(seconds: float) -> str:
    """``seconds`` since the epoch as RFC 3339 in UTC: ``2024-05-01T12:00:00.123456Z``."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1e6)  # rounded as datetime rounds
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return f"{_utc_second(whole)}.{micros:06d}Z"


@lru_cache(maxsize=4)
def _utc_second(seconds: int) -> str:
    """A second's date and time: formatted once for all the events of that second."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


# ---- what the V2 protocols log ----

#: The payloads of V2's REST infer are logged as received and sent; a body using the binary tensor
#: extension carries the length of its JSON header in this extension (``ce-headerlength``).
HEADER_LENGTH = "headerlength"


def log_rest(
    payloads: PayloadLog, model: str, body: bytes, content_type: str | None, header_length: str | None
) -> Exchange | None:
    """Log a V2 REST infer request (its body inflated, as the server read it)."""
    extensions = () if header_length is None else ((HEADER_LENGTH, header_length),)
    return payloads.request(model, call_id(), body, content_type or "application/json", extensions)


def log_rest_response(exchange: Exchange, body: bytes, header_length: int | None) -> None:
    if header_length is None:
        exchange.response(body, "application/json")
    else:
        exchange.response(body, "application/octet-stream", ((HEADER_LENGTH, str(header_length)),))


def log_grpc(payloads: PayloadLog, request: Message) -> Exchange | None:
    """Log a V2 gRPC ``ModelInferRequest`` as its protobuf bytes (serialized only when logged)."""
    return payloads.request(
        request.model_name,
        call_id(request.id),
        request.SerializeToString,
        PROTOBUF.format("inference.ModelInferRequest"),
    )


def log_grpc_response(exchange: Exchange, response: Message) -> None:
    exchange.response(response.SerializeToString(), PROTOBUF.format("inference.ModelInferResponse"))


def call_id(fallback: str | None = None) -> str:
    """The request id (``X-Request-ID`` or the one the server gave the request), else ``fallback``
    (a V2 body's own id), else a new one."""
    return request_id.get() or fallback or uuid.uuid4().hex
