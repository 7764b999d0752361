"""Slow request bodies on a real ``inferd serve`` with short limits: a body that stops, or trickles
below the minimum rate, gets 408 and its connection is closed; a request answered before its body
arrived (401, 413) has its connection closed at once; and connections still receiving a request (a
trickling body, a partial head) make room for an authorized client when they fill the pool.

Each request goes through the V2 infer fast path (`inferd.engines.fast_connection`) and, with a query
string the fast path leaves alone, through the app (uvicorn's own request cycle)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.security.conftest import APPS
from tests.servers import RunningServer, serve

BODY_TIMEOUT = 2.0
MIN_BODY_RATE = 240
MAX_CONNECTIONS = 4
TOKEN = "slow-bodies-token"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}
#: A body length within ``max_body_size`` (64 MiB): the server waits for it.
DECLARED = 10_000_000
PATHS = ["/v2/models/sleepy/infer", "/v2/models/sleepy/infer?through=app"]
#: How long a refused connection drops what it is sent before closing (connections.LINGER_SECONDS).
LINGER = 2.0


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    env = {
        "INFERD_BODY_TIMEOUT": str(BODY_TIMEOUT),
        "INFERD_MIN_BODY_RATE": str(MIN_BODY_RATE),
        "INFERD_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "INFERD_AUTH_TOKENS": TOKEN,
        "INFERD_REQUEST_TIMEOUT": "30",  # the sleepy model sleeps in a thread
    }
    with serve(str(APPS / "native_models.py"), "--dialect", "native", "--no-grpc", env=env) as running:
        yield running


def connect(server: RunningServer, timeout: float = 8) -> socket.socket:
    host, port = server.http_address.split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def head(path: str, length: int = DECLARED, token: str | None = TOKEN) -> bytes:
    authorization = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection (a reset ends it too), and how long
    that took; a socket timeout (the server kept it open) fails the test."""
    started = time.monotonic()
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received, time.monotonic() - started


def answered(sock: socket.socket) -> bool:
    """Whether the server sent something or closed ``sock``, asked without waiting."""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # a socket with a timeout waits for data before its recv
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)
    return True


def trickle(socks: list[socket.socket], data: bytes = b" ") -> None:
    """One more byte of each body (JSON whitespace); a socket the server closed is left alone."""
    for sock in socks:
        try:
            sock.send(data)
        except OSError:
            pass


def healthy(server: RunningServer) -> bool:
    answer = httpx.get(f"{server.http_url}/v2/health/ready", headers=AUTHORIZED, timeout=10)
    return answer.status_code == 200


def infer(server: RunningServer) -> httpx.Response:
    tensor = {"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0]}
    return httpx.post(
        f"{server.http_url}/v2/models/sleepy/infer", json={"inputs": [tensor]}, headers=AUTHORIZED, timeout=10
    )


def error_of(received: bytes) -> dict[str, str]:
    head_part, _, body = received.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head_part.lower(), received
    loaded: dict[str, str] = json.loads(body)
    return loaded


@pytest.mark.parametrize("path", PATHS)
def test_a_body_that_stops_gets_408_after_the_body_timeout(server: RunningServer, path: str) -> None:
    with connect(server) as sock:
        sock.sendall(head(path) + b'{"inputs": ')
        received, took = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b"connection: close" in received.lower()
    assert error_of(received) == {
        "error": f"no part of the request body received for {BODY_TIMEOUT:g} seconds"
    }
    assert BODY_TIMEOUT - 0.2 < took < BODY_TIMEOUT + 1.5
    assert healthy(server)


@pytest.mark.parametrize("path", PATHS)
def test_a_body_trickling_below_the_minimum_rate_gets_408(server: RunningServer, path: str) -> None:
    """A byte well within every body timeout, forever: the minimum rate ends it once the body has been
    arriving for the body timeout."""
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(head(path) + b"{")
        for _ in range(int(4 * BODY_TIMEOUT / 0.25)):  # bounded: 4 body timeouts at most
            time.sleep(0.25)
            if answered(sock):
                break
            trickle([sock])
        received, _ = read_until_closed(sock)
        took = time.monotonic() - started
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert error_of(received) == {
        "error": f"the request body arrives slower than {MIN_BODY_RATE} bytes a second"
    }
    assert BODY_TIMEOUT - 0.2 < took < 2 * BODY_TIMEOUT + 1
    assert healthy(server)


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (head(PATHS[0], token=None), 401),  # no token: refused before the body is read
        (head(PATHS[0], length=1024**3), 413),  # over max_body_size (64 MiB)
        (head(PATHS[1], length=1024**3), 413),
    ],
)
def test_a_request_answered_before_its_body_closes_the_connection(
    server: RunningServer, request_head: bytes, status: int
) -> None:
    """The answer is read, then the connection ends at once: it does not wait (kept alive) for a body
    nobody reads, which a client could trickle forever."""
    with connect(server) as sock:
        sock.sendall(request_head + b"{")
        received, took = read_until_closed(sock)
    assert received.startswith(f"HTTP/1.1 {status} ".encode()), received
    assert b"\r\nconnection: close\r\n" in received.lower()  # no client sends its next request on it
    assert "error" in error_of(received)
    assert took < BODY_TIMEOUT - 0.5  # not the body timeout: the answer ended it


def test_slow_bodies_filling_the_pool_make_room_for_an_authorized_client(server: RunningServer) -> None:
    """The issue's attack, scaled to MAX_CONNECTIONS: every connection the server keeps is a body
    trickling in; an authorized health check and inference are still served (each closes the
    connection that went the longest without sending), while the rest keep trickling, and those end
    with 408 once their rate is too low. Declaring 10 MB each costs the server no such memory."""
    time.sleep(0.3)  # the earlier tests' connections are gone
    before = server.peak_memory()
    with ExitStack() as held:
        slow = [held.enter_context(connect(server)) for _ in range(MAX_CONNECTIONS)]
        started = time.monotonic()
        for index, sock in enumerate(slow):
            sock.sendall(head(PATHS[index % 2]) + b"{")
        time.sleep(0.3)
        trickle(slow)
        ready = httpx.get(f"{server.http_url}/v2/health/ready", headers=AUTHORIZED, timeout=5)
        assert ready.status_code == 200, ready.text
        trickle(slow)
        inference = infer(server)
        assert inference.status_code == 200, inference.text
        assert time.monotonic() - started < BODY_TIMEOUT  # served while the slow bodies held on
        ended = [read_until_closed(sock)[0] for sock in slow]
    timed_out = [received for received in ended if received.startswith(b"HTTP/1.1 408 ")]
    assert len(timed_out) >= MAX_CONNECTIONS - 2, ended  # two made room, the others timed out
    assert server.peak_memory() - before < 50 * 1024 * 1024
    assert healthy(server)


def test_partial_request_heads_filling_the_pool_make_room_too(server: RunningServer) -> None:
    """Slowloris heads (a header line now and then) are not yet a request either."""
    with ExitStack() as held:
        slow = [held.enter_context(connect(server)) for _ in range(MAX_CONNECTIONS)]
        for sock in slow:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: localhost\r\n")
        time.sleep(0.3)
        trickle(slow, b"X-Slow: 1\r\n")
        assert healthy(server)


@pytest.mark.parametrize("path", PATHS)
def test_a_body_sent_in_pieces_within_the_timeout_is_answered(server: RunningServer, path: str) -> None:
    """A client on a slow link that pauses under the body timeout and sends more than the minimum
    rate is served: the timeout is between two reads, not for the whole body."""
    tensor = {"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0]}
    body = json.dumps({"inputs": [tensor], "parameters": {"padding": "x" * 200_000}}).encode()
    pieces = [body[start : start + 70_000] for start in range(0, len(body), 70_000)]
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(head(path, length=len(body)))
        for piece in pieces:
            time.sleep(BODY_TIMEOUT * 0.6)
            sock.sendall(piece)
        answer = sock.recv(65536)
    assert time.monotonic() - started > BODY_TIMEOUT * 1.5  # longer than the timeout in all
    assert answer.startswith(b"HTTP/1.1 200 "), answer
