"""The payload log's HTTP/1.1 client against sinks on loopback that answer as each test scripts: in
order, pipelined, chunked, refusing, closing mid-stream, silent, over TLS."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httptools
import pytest

from inferd.core.payloads import REQUEST, RESPONSE, PayloadLog
from inferd.protocols import cloudevents
from inferd.protocols.poster import Poster
from inferd.protocols.prometheus import registry
from tests.servers import free_port

ACCEPTED = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
CHUNKED = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
REFUSED = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy"
LAST = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
#: An answer whose body the connection's end ends (then the sink closes).
UNFRAMED = b"HTTP/1.1 201 Created\r\n\r\nno length"
#: What a script returns to close the connection, this request and those after it unanswered.
CLOSE = b"close"
#: What a script returns to leave a request unanswered.
SILENT = b""
#: A script: the bytes answering the sink's request number ``n`` (counted from 0 over all connections).
Script = Callable[[int], bytes]


@dataclass
class Received:
    """What the sink read: each request's headers and body, in order; and what it saw of the
    connections (how many, the most requests one read held)."""

    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    #: The connection (numbered from 0) each request came on.
    via: list[int] = field(default_factory=list)
    connections: int = 0
    most_in_one_read: int = 0

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(10):
            while len(self.requests) < count:
                await asyncio.sleep(0.01)


class _SinkConnection(asyncio.Protocol):
    def __init__(self, received: Received, script: Script) -> None:
        self.received, self.script = received, script
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.number = self.received.connections
        self.received.connections += 1

    def data_received(self, data: bytes) -> None:
        before = len(self.received.requests)
        self.parser.feed_data(data)
        self.received.most_in_one_read = max(
            self.received.most_in_one_read, len(self.received.requests) - before
        )

    def on_message_begin(self) -> None:
        self.headers: dict[str, str] = {}
        self.body = b""

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode().lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            return  # after CLOSE: not read
        answer = self.script(len(self.received.requests))
        self.received.requests.append((self.headers, self.body))
        self.received.via.append(self.number)
        if answer == CLOSE:
            self.transport.close()
        elif answer == UNFRAMED:
            self.transport.write(answer)
            self.transport.close()
        elif answer:
            self.transport.write(answer)


@asynccontextmanager
async def sink(script: Script, tls: ssl.SSLContext | None = None) -> AsyncIterator[tuple[str, Received]]:
    """A sink on a free loopback port answering as ``script`` says; yields its URL and what it got."""
    received = Received()
    server = await asyncio.get_running_loop().create_server(
        lambda: _SinkConnection(received, script), "127.0.0.1", 0, ssl=tls
    )
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/events?from=test", received
    finally:
        server.close()


@dataclass
class Outcomes:
    """What a poster reported: tag → status, or the reason it failed."""

    answered: dict[int, int] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)

    def poster(self, url: str, timeout: float = 5.0, connections: int = 4, depth: int = 128) -> Poster[int]:
        record = self.answered.__setitem__, self.failed.__setitem__
        return Poster(url, timeout, encode, *record, connections, depth)

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(10):
            while len(self.answered) + len(self.failed) < count:
                await asyncio.sleep(0.01)


def encode(tag: int) -> tuple[bytes, bytes]:
    return b"x-tag: %d\r\n" % tag, b"event %d" % tag


def tags(received: Received) -> list[int]:
    return [int(headers["x-tag"]) for headers, _ in received.requests]


async def test_events_sent_in_one_turn_arrive_pipelined_in_order_as_cloudevents() -> None:
    model = "poster-order"
    async with sink(lambda n: ACCEPTED) as (url, received):
        log = PayloadLog(url, cloudevents.sender("ns-1", 8080), lambda name: REQUEST | RESPONSE)
        for index in range(300):
            exchange = log.request(model, f"id-{index}", b'{"in": %d}' % index, "application/json")
            assert exchange is not None
            exchange.response(b'{"out": %d}' % index, "application/json", (("headerlength", "7"),))
        await received.wait_for(600)
        await log.close()
    assert received.most_in_one_read > 1  # pipelined: several requests in one read
    assert received.connections <= 4
    sent = [(f"id-{index}", kind) for index in range(300) for kind in ("request", "response")]
    got = [(h["ce-id"], h["ce-type"].rsplit(".", 1)[1]) for h, _ in received.requests]
    assert sorted(got) == sorted(sent)
    for connection in range(received.connections):  # each connection's in the order they were sent
        mine = [event for event, via in zip(got, received.via, strict=True) if via == connection]
        assert mine == sorted(mine, key=sent.index)
    headers, body = received.requests[1]
    assert body == b'{"out": 0}'
    assert headers["content-length"] == str(len(body))
    assert headers["host"] == url.split("/")[2]
    assert headers["content-type"] == "application/json"
    assert headers["ce-specversion"] == "1.0"
    assert headers["ce-source"].startswith("http://") and headers["ce-source"].endswith(":8080/")
    assert headers["ce-inferenceservicename"] == model
    assert headers["ce-namespace"] == "ns-1"
    assert headers["ce-component"] == "predictor"
    assert headers["ce-endpoint"] == ""
    assert headers["ce-headerlength"] == "7"
    assert headers["ce-time"].endswith("Z")
    assert (
        registry().get_sample_value("inferd_payload_log_events_total", {"model": model, "type": "response"})
        == 300
    )


async def test_a_sink_closing_mid_stream_fails_the_unanswered_and_is_connected_again() -> None:
    async with sink(lambda n: CLOSE if n == 10 else ACCEPTED) as (url, received):
        outcomes = Outcomes()
        poster = outcomes.poster(url, connections=1)
        for tag in range(50):
            poster.post(tag)
        await outcomes.wait_for(50)
        assert sorted([*outcomes.answered, *outcomes.failed]) == list(range(50))  # none lost silently
        assert all(outcomes.answered[tag] == 202 for tag in range(10))
        assert 10 in outcomes.failed and "closed" in outcomes.failed[10]
        assert received.connections == 1
        for tag in range(50, 60):
            poster.post(tag)
        await outcomes.wait_for(60)
        assert all(outcomes.answered.get(tag) == 202 for tag in range(50, 60))
        assert received.connections == 2
        assert poster.close() == []


async def test_non_2xx_chunked_and_unframed_answers_are_read_and_counted() -> None:
    answers = [REFUSED, CHUNKED, ACCEPTED]
    async with sink(lambda n: answers[n % 3]) as (url, _):
        outcomes = Outcomes()
        poster = outcomes.poster(url, connections=1, depth=4)  # the rest waits for answers
        for tag in range(30):
            poster.post(tag)
        await outcomes.wait_for(30)
        poster.close()
    assert outcomes.failed == {}
    assert [outcomes.answered[tag] for tag in range(30)] == [503, 200, 202] * 10

    async with sink(lambda n: UNFRAMED if n == 0 else ACCEPTED) as (url, _):
        outcomes = Outcomes()
        poster = outcomes.poster(url, connections=1, depth=1)
        poster.post(0)
        poster.post(1)
        await outcomes.wait_for(2)
        poster.close()
    assert outcomes.answered == {0: 201, 1: 202}

    model = "poster-refused"
    async with sink(lambda n: REFUSED) as (url, _):
        log = PayloadLog(url, cloudevents.sender("default", 8080), lambda name: REQUEST)
        for index in range(5):
            log.request(model, f"id-{index}", b"{}", "application/json")
        await log.close(deadline=5)
    assert registry().get_sample_value("inferd_payload_log_failures_total", {"model": model}) == 5


async def test_requests_behind_a_connection_close_answer_are_sent_again() -> None:
    async with sink(lambda n: LAST if n % 7 == 3 else ACCEPTED) as (url, received):
        outcomes = Outcomes()
        poster = outcomes.poster(url)
        for tag in range(40):
            poster.post(tag)
        await outcomes.wait_for(40)
        poster.close()
    assert outcomes.failed == {}
    assert sorted(outcomes.answered) == list(range(40))
    assert sorted(set(tags(received))) == list(range(40))  # those the sink did not read came again
    assert received.connections > 1


async def test_a_silent_sink_times_out_and_an_unreachable_one_fails_then_is_tried_again() -> None:
    async with sink(lambda n: SILENT) as (url, _):
        outcomes = Outcomes()
        poster = outcomes.poster(url, timeout=0.3)
        for tag in range(5):
            poster.post(tag)
        await outcomes.wait_for(5)
        assert set(outcomes.failed) == set(range(5))
        assert all("no answer within 0.3 s" in reason for reason in outcomes.failed.values())

    port = free_port()
    outcomes = Outcomes()
    poster = outcomes.poster(f"http://127.0.0.1:{port}/")
    for tag in range(3):
        poster.post(tag)
    await outcomes.wait_for(3)
    assert all("cannot connect" in reason for reason in outcomes.failed.values())
    server = await asyncio.get_running_loop().create_server(
        lambda: _SinkConnection(Received(), lambda n: ACCEPTED), "127.0.0.1", port
    )
    try:
        poster.post(3)  # within the back-off: waits, then goes out when connecting again works
        await outcomes.wait_for(4)
        assert outcomes.answered == {3: 202}
    finally:
        poster.close()
        server.close()


async def test_close_drops_what_the_sink_did_not_answer_within_the_deadline() -> None:
    model = "poster-shutdown"
    async with sink(lambda n: ACCEPTED if n < 2 else SILENT) as (url, received):
        log = PayloadLog(url, cloudevents.sender("default", 8080), lambda name: RESPONSE, timeout=30)
        for index in range(6):
            exchange = log.request(model, f"id-{index}", b"{}", "application/json")
            assert exchange is not None
            exchange.response(b"{}", "application/json")
        await received.wait_for(6)
        async with asyncio.timeout(5):
            await log.close(deadline=0.2)
    assert (
        registry().get_sample_value(
            "inferd_payload_log_dropped_total", {"model": model, "reason": "shutdown"}
        )
        == 4
    )
    assert (
        registry().get_sample_value("inferd_payload_log_events_total", {"model": model, "type": "response"})
        == 2
    )


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_an_https_sink_is_sent_to_over_tls_trusting_ssl_cert_file(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    async with sink(lambda n: ACCEPTED, tls) as (url, received):
        outcomes = Outcomes()
        outcomes.poster(url).post(1)  # certifi's CAs: the self-signed certificate is refused
        await outcomes.wait_for(1)
        assert "CERTIFICATE_VERIFY_FAILED" in outcomes.failed[1]

        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        poster = outcomes.poster(url)
        for tag in range(2, 12):
            poster.post(tag)
        await outcomes.wait_for(11)
        poster.close()
    assert outcomes.answered == dict.fromkeys(range(2, 12), 202)
    assert tags(received) == list(range(2, 12))
    assert received.requests[0][1] == b"event 2"
