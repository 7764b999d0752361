"""Payload log events as KServe's logger sends them: CloudEvents 1.0 in HTTP binary mode.

The event's payload is the POST's body, untouched, its ``Content-Type`` the payload's own (the
CloudEvent's ``datacontenttype``); every attribute is a ``ce-`` header: ``ce-specversion`` 1.0,
``ce-id`` the call's request id (its request and response events share it), ``ce-type``
``org.kubeflow.serving.inference.request`` or ``.response``, ``ce-source``, ``ce-time`` (RFC 3339, UTC),
and KServe's extensions: ``ce-inferenceservicename`` (the model), ``ce-namespace``, ``ce-component``
(``predictor``) and ``ce-endpoint`` (empty: inferd has no canary), plus the event's own extensions.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from inferd.core.context import request_id
from inferd.core.payloads import REQUEST, Encoder, Event, Exchange, PayloadLog

Message = Any  # a protobuf message; protobuf's generated classes carry no usable hints

TYPES = {REQUEST: "org.kubeflow.serving.inference.request"}
RESPONSE_TYPE = "org.kubeflow.serving.inference.response"
COMPONENT = "predictor"
#: The content type of a gRPC message logged as its protobuf bytes: KServe logs only REST's JSON.
PROTOBUF = "application/x-protobuf; messageType={}"


def encoder(namespace: str, port: int) -> Encoder:
    """The headers of an event sent in ``namespace`` by the server on HTTP ``port``."""
    source = default_source(port)

    def headers(event: Event) -> Mapping[str, str]:
        found = {
            "content-type": event.content_type,
            "ce-specversion": "1.0",
            "ce-id": event.id,
            "ce-type": TYPES.get(event.kind, RESPONSE_TYPE),
            "ce-source": source,
            "ce-time": rfc3339(event.time),
            "ce-inferenceservicename": event.model,
            "ce-namespace": namespace,
            "ce-component": COMPONENT,
            "ce-endpoint": "",
        }
        for name, value in event.extensions:
            found["ce-" + name] = value
        return found

    return headers


def default_source(port: int) -> str:
    """Where events say they come from: this host's name and the server's HTTP port."""
    return f"http://{socket.gethostname()}:{port}/"


def rfc3339(seconds: float) -> str:
    """``seconds`` since the epoch as RFC 3339 in UTC: ``2024-05-01T12:00:00.123456Z``."""
    return (
        datetime.fromtimestamp(seconds, timezone.utc)
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


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
