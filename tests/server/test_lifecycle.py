"""Start-up, graceful shutdown, logging and limits of a real server process."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time

import httpx

from tests.conftest import IRIS, TEST_MODELS
from tests.servers import ROOT, RunningServer, serve

SLOW = str(TEST_MODELS / "native.py")


def slow_request(seconds: float) -> dict[str, object]:
    return {"inputs": [{"name": "seconds", "shape": [1], "datatype": "FP32", "data": [seconds]}]}


def test_sigterm_lets_in_flight_requests_finish() -> None:
    with serve(SLOW) as server:
        answers: list[httpx.Response] = []
        url = f"{server.http_url}/v2/models/slow/infer"
        caller = threading.Thread(
            target=lambda: answers.append(httpx.post(url, json=slow_request(1.5), timeout=30))
        )
        caller.start()
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        caller.join(timeout=30)
        assert server.process.wait(timeout=30) == 0
        assert answers and answers[0].status_code == 200
        assert answers[0].json()["outputs"][0]["data"] == [True]


def test_body_over_the_limit_is_413_and_the_server_keeps_serving() -> None:
    with serve(IRIS, "--no-grpc", env={"INFERD_MAX_BODY_SIZE": "2000"}) as server:
        assert server.grpc_address is None
        big = {
            "inputs": [{"name": "input-0", "shape": [300, 4], "datatype": "FP32", "data": [[1.0] * 4] * 300}]
        }
        response = httpx.post(f"{server.http_url}/v2/models/iris/infer", json=big, timeout=30)
        assert response.status_code == 413
        assert "2000 bytes" in response.json()["error"]

        def chunks() -> object:
            yield b'{"inputs": ['
            yield b" " * 3000

        streamed = httpx.post(f"{server.http_url}/v2/models/iris/infer", content=chunks(), timeout=30)
        assert streamed.status_code == 413
        small = {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
        assert (
            httpx.post(f"{server.http_url}/v2/models/iris/infer", json=small, timeout=30).status_code == 200
        )


def test_access_log_lines_are_json_with_the_request_id() -> None:
    with serve(IRIS, "--access-log") as server:
        response = httpx.get(f"{server.http_url}/v2/models/iris", headers={"X-Request-ID": "abc-123"})
        assert response.headers["x-request-id"] == "abc-123"
        generated = httpx.get(f"{server.http_url}/v2").headers["x-request-id"]
        assert generated.startswith(f"{server.process.pid:x}-")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("abc-123" in line for line in server.stderr_lines):
            time.sleep(0.05)
    lines = [json.loads(line) for line in server.stderr_lines if line.startswith("{")]
    access = [line for line in lines if line.get("logger") == "inferd.access"]
    assert {"message": "GET /v2/models/iris 200", "request_id": "abc-123", "status": 200}.items() <= next(
        line for line in access if line.get("request_id") == "abc-123"
    ).items()


def test_no_access_log_by_default(iris_server: object) -> None:
    from tests.servers import RunningServer

    assert isinstance(iris_server, RunningServer)
    httpx.get(f"{iris_server.http_url}/v2")
    time.sleep(0.2)
    assert not any("inferd.access" in line for line in iris_server.stderr_lines)


REQUEST = ROOT / "examples" / "iris" / "request.json"


def test_a_client_leaving_mid_body_is_no_server_error(iris_server: RunningServer) -> None:
    """A client that closes its connection while its body is read gets no error logged (its 499
    reaches no one), and the server keeps serving."""
    host, port = iris_server.http_address.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = f"POST /v2/models/iris/infer HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        sock.sendall(f"{head}Content-Length: 1000\r\n\r\n".encode() + b'{"inputs": [')
        time.sleep(0.3)  # the handler is waiting for the rest of the body
    time.sleep(0.3)
    answer = httpx.post(
        f"{iris_server.http_url}/v2/models/iris/infer", content=REQUEST.read_bytes(), timeout=30
    )
    assert answer.status_code == 200
    assert "unhandled error" not in iris_server.log
