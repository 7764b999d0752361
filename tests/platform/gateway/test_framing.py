"""HTTP/1.1 framing the property tests against h11 found wrong (tests/fuzz/test_gateway_framing_reference.py,
tests/fuzz/test_upstream_answers_reference.py), sent through a real gateway. Requests, to a real
upstream (uvicorn): a ``Connection`` header naming Content-Length made the gateway drop the header
framing the body and send the body after it, which the upstream read as a request of its own: a
request smuggled past the gateway's routing and rewriting, whose answer waited on the pooled
connection for the next client. Answers, from an upstream on a raw socket: a chunked answer cut
short by the upstream's end was passed on as whole."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from inferd.platform.gateway import EndpointTable
from tests.platform.gateway.conftest import RunningGateway, Upstream

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nhost: upstream\r\n\r\n"


def raw_request(gateway: RunningGateway, request: bytes) -> bytes:
    """``request`` sent on a connection of its own; the answer's bytes (read until the gateway has
    sent a whole answer or 5 seconds pass)."""
    with socket.create_connection(("127.0.0.1", gateway.server.port), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
            head, _, body = answer.partition(b"\r\n\r\n")
            if b"content-length: %d" % len(body) in head.lower():
                break
        return answer


def test_a_connection_header_naming_content_length_smuggles_nothing(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream
) -> None:
    table.set("main", [(alpha.address, 100)])
    started = time.monotonic()
    answer = raw_request(
        gateway,
        b"POST /e/main/echo HTTP/1.1\r\nhost: gateway\r\ncontent-type: text/plain\r\n"
        b"connection: keep-alive, content-length\r\ncontent-length: %d\r\n\r\n%s" % (len(SMUGGLED), SMUGGLED),
    )
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b"\r\n\r\n" + SMUGGLED)  # the body reached /echo as the body
    # the next client on the gateway's pooled connection gets its own answer
    with gateway.http() as http:
        for _ in range(3):
            follow = http.get("/e/main/mine")
            assert follow.status_code == 200 and follow.text == "alpha"
    assert time.monotonic() - started < 5
    time.sleep(0.1)  # a smuggled request would have reached the upstream by now
    assert "/smuggled" not in alpha.hits
    assert alpha.hits == ["/echo", "/mine", "/mine", "/mine"]
    assert alpha.bodies[0] == SMUGGLED


def test_several_connection_headers_all_count(
    table: EndpointTable, http: httpx.Client, alpha: Upstream
) -> None:
    table.set("main", [(alpha.address, 100)])
    answer = http.get(
        "/e/main/headers",
        headers=[("connection", "x-one"), ("connection", "keep-alive"), ("x-one", "1"), ("x-two", "2")],
    )
    seen = dict(answer.json()["headers"])
    assert "x-one" not in seen and seen["x-two"] == "2"


def test_every_x_forwarded_for_is_kept(table: EndpointTable, http: httpx.Client, alpha: Upstream) -> None:
    table.set("main", [(alpha.address, 100)])
    answer = http.get(
        "/e/main/headers",
        headers=[("x-forwarded-for", "10.0.0.1"), ("x-forwarded-for", "10.0.0.2, 10.0.0.3")],
    )
    seen = dict(answer.json()["headers"])
    assert seen["x-forwarded-for"] == "10.0.0.1, 10.0.0.2, 10.0.0.3, 127.0.0.1"


# ---- answers: what the property test of the gateway's client against h11 found ----


@contextmanager
def raw_upstream(answer: bytes) -> Iterator[str]:
    """An upstream on loopback that reads a request's head, writes ``answer`` and closes the
    connection, whatever ``answer`` says; yields its address."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                received = b""
                while b"\r\n\r\n" not in received:
                    data = connection.recv(65536)
                    if not data:
                        break
                    received += data
                connection.sendall(answer)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_chunked_answer_cut_short_is_cut_short_for_the_client(
    table: EndpointTable, http: httpx.Client
) -> None:
    """The upstream dies after the first chunk: the client must not get a whole-looking answer."""
    cut = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"
    with raw_upstream(cut) as address:
        table.set("main", [(address, 100)])
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError):
            http.get("/e/main/anything")
        assert time.monotonic() - started < 5
    with raw_upstream(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok") as address:
        table.set("main", [(address, 100)])
        assert http.get("/e/main/anything").text == "ok"  # the gateway keeps serving


def test_every_connection_header_of_an_answer_counts(table: EndpointTable, http: httpx.Client) -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nconnection: x-one\r\nconnection: close\r\nx-one: 1\r\nx-two: 2\r\n"
        b"content-length: 2\r\n\r\nok"
    )
    with raw_upstream(answer) as address:
        table.set("main", [(address, 100)])
        got = http.get("/e/main/anything")
    assert got.text == "ok" and got.headers.get("x-two") == "2"
    assert "x-one" not in got.headers
