"""What one connection may cost, on a real server with short limits: a client that sends nothing, or
a request head a little at a time, or stays idle after an answer, is disconnected in time; a head over
the size limit gets 431 without costing memory; connections past the limit get 503; and the server
raised its open files limit so that it can hold them."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.security.conftest import APPS
from tests.servers import RunningServer, serve

HEADER_TIMEOUT = 1.5
KEEP_ALIVE_TIMEOUT = 1
MAX_CONNECTIONS = 4
MAX_HEADER_SIZE = 64 * 1024
#: The soft open files limit the server is started with, below the hard one it should raise it to.
STARTING_SOFT_LIMIT = 256
REQUEST = b"GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    """The server starts with a soft open files limit below its hard one (children inherit this
    process's limits, restored once the server is up)."""
    env = {
        "INFERD_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "INFERD_KEEP_ALIVE_TIMEOUT": str(KEEP_ALIVE_TIMEOUT),
        "INFERD_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "INFERD_REQUEST_TIMEOUT": "30",  # the sleepy model sleeps in a thread, not in the event loop
    }
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(STARTING_SOFT_LIMIT, before[0]), before[1]))
    try:
        with serve(str(APPS / "native_models.py"), "--dialect", "native", "--no-grpc", env=env) as running:
            resource.setrlimit(resource.RLIMIT_NOFILE, before)
            yield running
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def connect(server: RunningServer) -> socket.socket:
    host, port = server.http_address.split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def read_answers(sock: socket.socket, count: int) -> bytes:
    """What the server sends until ``count`` answers began (or it closes the connection)."""
    received = b""
    while received.count(b"HTTP/1.1 ") < count and (chunk := sock.recv(65536)):
        received += chunk
    return received


def is_closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (without sending anything), asked without waiting."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    finally:
        sock.settimeout(timeout)


def open_descriptors(server: RunningServer) -> int:
    return len(list(Path(f"/proc/{server.process.pid}/fd").iterdir()))


def healthy(server: RunningServer) -> bool:
    return httpx.get(f"{server.http_url}/v2/health/live", timeout=10).status_code == 200


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(server: RunningServer) -> None:
    with connect(server) as sock:
        received, took = read_until_closed(sock)
    assert received == b""
    assert HEADER_TIMEOUT - 0.2 < took < HEADER_TIMEOUT + 2


def test_a_slow_request_head_gets_408_after_the_header_timeout(server: RunningServer) -> None:
    """A slowloris client: it keeps sending, a header at a time, but never finishes the head."""
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n")
        time.sleep(HEADER_TIMEOUT / 2)
        sock.sendall(b"X-Slow: 1\r\n")
        received, _ = read_until_closed(sock)
        took = time.monotonic() - started
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b'{"error":"request headers not received within 1.5 seconds"}' in received
    assert HEADER_TIMEOUT - 0.2 < took < HEADER_TIMEOUT + 2
    assert healthy(server)


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(server: RunningServer) -> None:
    with connect(server) as sock:
        sock.sendall(REQUEST)
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        received, took = read_until_closed(sock)
    assert received == b""
    assert KEEP_ALIVE_TIMEOUT - 0.2 < took < KEEP_ALIVE_TIMEOUT + 2


def test_idle_connections_make_room_for_new_ones_past_the_limit(server: RunningServer) -> None:
    """Idle sockets far past the limit (the issue's 1,100 idle connections against 1,024 descriptors)
    cannot lock clients out nor exhaust descriptors: each new connection closes the one idle the
    longest, so the server holds at most the limit."""
    time.sleep(0.2)  # the server has seen the earlier tests' connections close
    descriptors = open_descriptors(server)
    with ExitStack() as held:
        idle = [held.enter_context(connect(server)) for _ in range(3 * MAX_CONNECTIONS)]
        time.sleep(0.2)
        assert open_descriptors(server) - descriptors <= MAX_CONNECTIONS
        assert healthy(server)
        time.sleep(0.1)
        kept = [sock for sock in idle if not is_closed(sock)]
        assert len(kept) == MAX_CONNECTIONS - 1  # one more made room for the health check
        for sock in kept:  # and they are served
            sock.sendall(REQUEST)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")


def sleep_request(seconds: float) -> bytes:
    """A V2 inference of the sleepy model that takes ``seconds`` to answer."""
    tensor = {"name": "seconds", "shape": [1], "datatype": "FP32", "data": [seconds]}
    body = json.dumps({"inputs": [tensor]}).encode()
    head = f"POST /v2/models/sleepy/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def test_a_connection_past_the_limit_of_busy_ones_gets_503(server: RunningServer) -> None:
    """When every connection's request is being answered, a new one is answered 503, and requests
    work again once they are done. (A connection still receiving its request makes room instead:
    tests/security/test_slow_bodies.py.)"""
    with ExitStack() as held:
        busy = [held.enter_context(connect(server)) for _ in range(MAX_CONNECTIONS)]
        for sock in busy:
            sock.sendall(sleep_request(1.5))
        time.sleep(0.3)
        with connect(server) as extra:
            extra.sendall(REQUEST)
            received, _ = read_until_closed(extra)
        assert received.startswith(b"HTTP/1.1 503 "), received
        assert b"retry-after: 1" in received.lower()
        assert b'{"error":"the server has 4 connections open; retry later"}' in received
        for sock in busy:  # the connections within the limit are served
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
    deadline = time.monotonic() + 5
    while not healthy(server):  # the server notices the closed connections a moment later
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_oversized_request_head_gets_431_without_costing_memory(server: RunningServer) -> None:
    before = server.peak_memory()
    with httpx.Client(base_url=server.http_url, timeout=30) as http:
        answer = http.get("/v2/health/live", headers={"X-Big": "x" * 1024 * 1024})
        assert answer.status_code == 431, answer.text
        assert answer.json() == {
            "error": f"request headers are larger than the limit of {MAX_HEADER_SIZE} bytes"
        }
        many = {f"X-Header-{i}": "y" * 1000 for i in range(100)}  # 100 headers of 1 kB
        assert http.get("/v2/health/live", headers=many).status_code == 431
        within = {f"X-Header-{i}": "y" * 1000 for i in range(50)}
        assert http.get("/v2/health/live", headers=within).status_code == 200
    assert server.peak_memory() - before < 8 * 1024 * 1024
    assert healthy(server)


def test_the_server_raised_its_open_files_limit_to_the_hard_limit(server: RunningServer) -> None:
    limits = Path(f"/proc/{server.process.pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    assert soft == hard, line


def test_a_large_body_sent_with_its_head_is_not_counted_as_head(server: RunningServer) -> None:
    """Head, a body four times the head limit and a second request, sent in one go: only heads count."""
    tensor = {"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0]}
    body = json.dumps({"inputs": [tensor], "parameters": {"padding": "x" * (4 * MAX_HEADER_SIZE)}}).encode()
    head = f"POST /v2/models/sleepy/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(head.encode() + body + REQUEST)
        assert read_answers(sock, 2).count(b"HTTP/1.1 200 ") == 2


def test_pipelined_requests_are_answered_in_order(server: RunningServer) -> None:
    with connect(server) as sock:
        sock.sendall(REQUEST * 3)
        assert read_answers(sock, 3).count(b"HTTP/1.1 200 ") == 3
