"""Both HTTP server cores (``--http uvicorn``, the default, and ``--http granian``) serving the same
app: V2 infer through the connection fast path (`inferd.server.fast`) answers as the full stack does,
requests it does not take go through the app, and granian shares one port across workers and drains
on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import struct
from collections.abc import Iterator

import pytest

from tests.conftest import TEST_MODELS
from tests.engines.test_graceful_shutdown import slow_call_in_flight, slow_request
from tests.servers import RunningServer, serve

NATIVE = str(TEST_MODELS / "native.py")
ECHO = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.5, 2.5]}]}
MAX_BODY = 4096


@pytest.fixture(scope="module", params=["uvicorn", "granian"])
def core_server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    options = ("--http", request.param, "--access-log", "--max-body-size", str(MAX_BODY), "--no-grpc")
    with serve(NATIVE, *options) as server:
        yield server


def raw_exchange(server: RunningServer, data: bytes, answers: int) -> list[bytes]:
    """``data`` written on one connection at once; the ``answers`` HTTP responses read back."""
    host, port = server.http_address.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(data)
        received, responses = b"", []
        while len(responses) < answers:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {len(responses)} answers: {received!r}"
            received += chunk
            while b"\r\n\r\n" in received:
                head, rest = received.split(b"\r\n\r\n", 1)
                length = next(
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length")
                )
                if len(rest) < length:
                    break
                responses.append(head + b"\r\n\r\n" + rest[:length])
                received = rest[length:]
    return responses


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_infer_answers_with_the_request_id_and_logs_the_access(core_server: RunningServer) -> None:
    with core_server.http() as http:
        answer = http.post("/v2/models/echo/infer", json=ECHO, headers={"X-Request-ID": "core-1"})
        generated = http.post("/v2/models/echo/infer", json=ECHO)
    assert answer.status_code == 200
    assert answer.json()["outputs"][0]["data"] == [1.5, 2.5]
    assert answer.headers["x-request-id"] == "core-1"
    assert answer.headers["content-type"] == "application/json"
    assert generated.headers["x-request-id"] not in ("", "core-1")
    line = next(
        json.loads(line)
        for line in core_server.wait_for_log('"core-1"').splitlines()
        if '"core-1"' in line and "inferd.access" in line
    )
    assert (line["method"], line["path"], line["status"]) == ("POST", "/v2/models/echo/infer", 200)


def test_infer_errors_are_answered_from_the_status_table(core_server: RunningServer) -> None:
    with core_server.http() as http:
        unknown = http.post("/v2/models/nope/infer", json=ECHO)
        failing = http.post(
            "/v2/models/failing/infer",
            json={"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]},
        )
        malformed = http.post("/v2/models/echo/infer", content=b"{not json")
    assert unknown.status_code == 404 and "nope" in unknown.json()["error"]
    assert failing.status_code == 500 and "secret" not in failing.text
    assert malformed.status_code == 400 and "Invalid JSON" in malformed.json()["error"]
    assert all("x-request-id" in answer.headers for answer in (unknown, failing, malformed))


def test_requests_the_fast_path_leaves_are_answered_by_the_app(core_server: RunningServer) -> None:
    body = json.dumps(ECHO).encode()
    with core_server.http() as http:
        chunked = http.post("/v2/models/echo/infer", content=iter([body[:10], body[10:]]))
        foreign = http.post("/v2/models/echo/infer", json=ECHO, headers={"Host": "evil.example"})
        too_large = http.post("/v2/models/echo/infer", content=b" " * (MAX_BODY + 1))
        metadata = http.get("/v2/models/echo")
    assert chunked.status_code == 200 and chunked.json()["outputs"][0]["data"] == [1.5, 2.5]
    assert foreign.status_code == 403
    assert too_large.status_code == 413
    assert metadata.status_code == 200 and metadata.json()["name"] == "echo"


def test_pipelined_requests_are_answered_in_order(core_server: RunningServer) -> None:
    echo = post("/v2/models/echo/infer", json.dumps(ECHO).encode(), "X-Request-ID: first")
    other = post("/v2/models/nope/infer", json.dumps(ECHO).encode(), "X-Request-ID: second")
    ready = b"GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-ID: third\r\n\r\n"
    answers = raw_exchange(core_server, echo + other + ready + echo, 4)
    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 404 Not Found",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
    ]
    assert [
        b"x-request-id: " + rid in answer.lower()
        for answer, rid in zip(answers, (b"first", b"second", b"third", b"first"), strict=True)
    ] == [True] * 4


def test_an_answer_that_waits_keeps_its_place_and_its_request_id(core_server: RunningServer) -> None:
    # slow's predict awaits (the fast path hands it to a task); echo's is answered inline
    slow = post("/v2/models/slow/infer", json.dumps(slow_request(0.2)).encode(), "X-Request-ID: waits")
    echo = post("/v2/models/echo/infer", json.dumps(ECHO).encode())
    answers = raw_exchange(core_server, slow + echo + slow + echo, 4)
    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [b"HTTP/1.1 200 OK"] * 4
    ids = [header_value(answer, b"x-request-id") for answer in answers]
    assert ids[0] == ids[2] == b"waits"
    assert ids[1] != b"waits" and ids[3] != b"waits" and ids[1] != ids[3]  # no id leaked from a task
    assert json.loads(answers[1].split(b"\r\n\r\n", 1)[1])["outputs"][0]["data"] == [1.5, 2.5]


def header_value(answer: bytes, name: bytes) -> bytes | None:
    head = answer.split(b"\r\n\r\n", 1)[0]
    found = [
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")[1:]
        if line.lower().startswith(name + b":")
    ]
    return found[0] if found else None


def test_granian_workers_share_the_port_and_drain_on_sigterm() -> None:
    with serve(
        NATIVE, "--http", "granian", "--workers", "2", env={"INFERD_GRACEFUL_TIMEOUT": "20"}
    ) as server:
        with server.http() as http:
            answer = http.post("/v2/models/pid/infer", json={"inputs": []})
        assert answer.status_code == 200
        assert answer.json()["outputs"][0]["data"][0] != server.process.pid  # a worker answered
        caller, answers = slow_call_in_flight(server, 1)
        server.process.send_signal(signal.SIGTERM)
        caller.join(timeout=30)
        assert server.process.wait(timeout=30) == 0
    assert answers and answers[0].status_code == 200
    assert answers[0].json()["outputs"][0]["data"] == [True]


def test_binary_outputs_are_sent_after_the_json_header(core_server: RunningServer) -> None:
    """The fast path's answer in parts (the JSON header, then each tensor from its array's memory)
    arrives as one body of the length it declares."""
    request = {**ECHO, "parameters": {"binary_data_output": True}}
    with core_server.http() as http:
        answer = http.post("/v2/models/echo/infer", json=request)
    assert answer.status_code == 200, answer.text
    header_length = int(answer.headers["inference-header-content-length"])
    header = json.loads(answer.content[:header_length])
    (output,) = header["outputs"]
    assert output["parameters"]["binary_data_size"] == 8
    assert answer.content[header_length:] == struct.pack("<2f", 1.5, 2.5)
