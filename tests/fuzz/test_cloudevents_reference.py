"""The payload log's CloudEvents (`inferd.protocols.cloudevents.encoder`, framed as
`inferd.protocols.poster` sends them) against the CloudEvents SDK's HTTP binary binding.

Events with random ids, model names, namespaces, extensions and bodies are encoded by inferd and
framed as the poster frames a POST; h11 parses the request (it must: one request, the body whole),
and the SDK decodes its headers: every attribute must come back as it went in. The HTTP binding
(3.1.3.2) asks ce- header values to be percent-encoded (space, ``"``, ``%`` and everything outside
printable ASCII, as UTF-8); inferd's encoding of each attribute must be the SDK's, byte for byte.

inferd has no CloudEvents decoder (it only sends events), so the SDK → inferd direction is that
equality: what the SDK would send for the event is what inferd sends.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import h11
from cloudevents.core.bindings import http as binding
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.core.payloads import REQUEST, RESPONSE, Event
from inferd.protocols import cloudevents
from inferd.protocols.poster import request_prefix
from tests.fuzz.conftest import EXAMPLES

MANY = settings(max_examples=EXAMPLES * 5)
#: What an attribute value may hold: anything but NUL and lone surrogates (no UTF-8 for them), with
#: the characters the binding singles out made likely.
values = st.text(
    st.one_of(
        st.sampled_from(' "%\r\n\t\x7f\x80\xe9\u20ac\U0001f600+/:;=,'),
        st.characters(codec="utf-8", exclude_characters="\x00"),
    ),
    min_size=1,
    max_size=20,
)
names = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10).filter(
    lambda name: (
        name not in {"id", "type", "source", "time", "specversion", "datacontenttype"}
        and name not in {"inferenceservicename", "namespace", "component", "endpoint"}
    )
)
events = st.builds(
    Event,
    kind=st.sampled_from([REQUEST, RESPONSE]),
    id=values,
    model=values,
    body=st.binary(max_size=64),
    content_type=st.sampled_from(["application/json", "application/octet-stream", cloudevents.PROTOBUF]),
    time=st.floats(0, 4_000_000_000),
    extensions=st.lists(st.tuples(names, values), max_size=3, unique_by=lambda pair: pair[0]).map(tuple),
)


def framed(head: bytes, body: bytes) -> bytes:
    """The POST the poster writes for an event (`poster._Connection.send`)."""
    return (
        request_prefix(urlsplit("http://sink.example:8080/events"))
        + b"%d\r\n" % len(body)
        + head
        + b"\r\n"
        + body
    )


def parsed(request: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The request's headers and body as h11 reads them; exactly one request in ``request``."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(request)
    head = connection.next_event()
    assert isinstance(head, h11.Request), head
    body = b""
    while True:
        event = connection.next_event()
        if isinstance(event, h11.Data):
            body += event.data
        else:
            assert isinstance(event, h11.EndOfMessage), event
            break
    assert connection.next_event() is h11.NEED_DATA  # nothing after it
    return list(head.headers), body


@given(events, values)
@MANY
def test_the_sdk_decodes_what_inferd_sends(event: Event, namespace: str) -> None:
    try:
        head, body = cloudevents.encoder(namespace, 8080)(event)
    except UnicodeError:  # a content type beyond Latin-1: not among those generated
        raise AssertionError("an attribute could not be encoded") from None
    headers, received = parsed(framed(head, body))
    assert received == body
    message = binding.HTTPMessage({name.decode(): value.decode("latin-1") for name, value in headers}, body)
    decoded = binding.from_binary(message, JSONFormat(), CloudEvent)
    attributes = decoded.get_attributes()
    assert attributes["specversion"] == "1.0"
    assert attributes["id"] == event.id
    assert attributes["type"] == (cloudevents.TYPES.get(event.kind) or cloudevents.RESPONSE_TYPE)
    assert attributes["source"] == cloudevents.default_source(8080)
    assert attributes["inferenceservicename"] == event.model
    assert attributes["namespace"] == namespace
    assert attributes["component"] == "predictor"
    assert attributes["endpoint"] == ""
    assert attributes["datacontenttype"] == event.content_type
    for name, value in event.extensions:
        assert attributes[name] == value
    sent = dt.datetime.fromtimestamp(event.time, dt.timezone.utc)
    assert abs((attributes["time"] - sent).total_seconds()) <= 1e-6


@given(events, values)
@MANY
def test_inferd_encodes_each_attribute_as_the_sdk_does(event: Event, namespace: str) -> None:
    head, _ = cloudevents.encoder(namespace, 8080)(event)
    ours = dict(line.split(": ", 1) for line in head.decode("ascii").split("\r\n") if line)
    attributes = {
        "id": event.id,
        "source": cloudevents.default_source(8080),
        "type": cloudevents.TYPES.get(event.kind) or cloudevents.RESPONSE_TYPE,
        "specversion": "1.0",
        "datacontenttype": event.content_type,
        "time": dt.datetime.fromtimestamp(event.time, dt.timezone.utc),
        "inferenceservicename": event.model,
        "namespace": namespace,
        "component": "predictor",
        "endpoint": "",
        **dict(event.extensions),
    }
    theirs = binding.to_binary(CloudEvent(attributes, None), JSONFormat()).headers
    assert ours["content-type"] == theirs["content-type"]
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        if name != "ce-time":  # RFC 3339 either way; the SDK leaves out a zero fraction
            assert ours[name] == value, name


def test_values_the_binding_singles_out() -> None:
    event = Event(REQUEST, 'a b"c%41\u00e9\u20ac\U0001f600', "m", b"{}", "application/json", 0.0)
    head, _ = cloudevents.encoder("ns", 8080)(event)
    assert b"ce-id: a%20b%22c%2541%C3%A9%E2%82%AC%F0%9F%98%80\r\n" in head
