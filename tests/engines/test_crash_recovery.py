"""--isolate: user code that segfaults, exits, outgrows its memory limit or hangs costs its in-flight
requests a 503, not a reset connection; the model process is replaced, counted, and the other
worker keeps serving. Without isolation a lost worker is replaced and counted too."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from tests.conftest import TEST_MODELS
from tests.servers import ROOT, RunningServer, answering_pid, pids_seen, serve, served

CRASHING = str(TEST_MODELS / "crashing.py")
LIMITS = {
    "INFERD_HANG_TIMEOUT": "3",
    "INFERD_WORKER_MEMORY_LIMIT": "250",
    "INFERD_MEMORY_CHECK_INTERVAL": "0.2",
}


def body(x: int) -> dict[str, object]:
    return {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [x]}]}


def restarts(server: RunningServer, process: str, reason: str) -> float:
    text = httpx.get(f"{server.http_url}/metrics", timeout=30).text
    prefix = f'inferd_worker_restarts_total{{process="{process}",reason="{reason}"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


isolated = served(
    lambda: serve(CRASHING, "--isolate", "--workers", "2", "--dialect", "native", env=LIMITS), scope="module"
)


@pytest.mark.parametrize(
    ("model", "reason", "cause"),
    [
        ("segfault", "signal", "died"),
        ("exits", "exit", "died"),
        ("leaks", "memory", "memory limit"),
        ("hangs", "hang", "did not answer in time"),
    ],
)
def test_a_lost_model_process_answers_503_and_is_replaced(
    isolated: RunningServer, model: str, reason: str, cause: str
) -> None:
    before = pids_seen(isolated, "segfault", body(0), 2)
    assert len(before) == 2 and isolated.process.pid not in before
    counted = restarts(isolated, "model", reason)

    started = time.monotonic()
    lost = httpx.post(f"{isolated.http_url}/v2/models/{model}/infer", json=body(1), timeout=30)
    assert lost.status_code == 503
    assert lost.headers["retry-after"] == "1"
    assert lost.headers["content-type"] == "application/json"
    assert cause in lost.json()["error"]
    assert time.monotonic() - started < 20

    # Every request succeeds meanwhile (one reaching the new model process waits for its load);
    # the other worker's model process was never restarted.
    after = pids_seen(isolated, "segfault", body(0), 2)
    assert len(after) == 2
    assert len(before & after) == 1
    assert restarts(isolated, "model", reason) == counted + 1
    assert isolated.wait_for_log(f"({reason}, exit code")


def test_requests_in_the_other_worker_are_answered_during_a_hang(isolated: RunningServer) -> None:
    import threading

    stuck: list[httpx.Response] = []
    hang = threading.Thread(
        target=lambda: stuck.append(
            httpx.post(f"{isolated.http_url}/v2/models/hangs/infer", json=body(1), timeout=30)
        )
    )
    hang.start()
    time.sleep(0.5)
    answered = [
        httpx.post(f"{isolated.http_url}/v2/models/hangs/infer", json=body(0), timeout=30) for _ in range(6)
    ]
    hang.join()
    assert stuck[0].status_code == 503
    # The kernel hands each new connection to either worker: those of the healthy one answer at once.
    assert any(response.status_code == 200 for response in answered)
    assert all(response.status_code in (200, 503) for response in answered)


def wait_for_restarts(server: RunningServer, reason: str, count: int) -> float:
    deadline = time.monotonic() + 60
    while restarts(server, "worker", reason) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return restarts(server, "worker", reason)


def test_without_isolation_a_lost_worker_is_replaced_and_counted() -> None:
    env = {"INFERD_WORKER_MEMORY_LIMIT": "250", "INFERD_MEMORY_CHECK_INTERVAL": "0.2"}
    with serve(CRASHING, "--workers", "2", "--no-grpc", "--dialect", "native", env=env) as server:
        pid = answering_pid(server, "segfault", body(0))
        os.kill(pid, signal.SIGSEGV)
        assert wait_for_restarts(server, "signal", 1) == 1
        assert f"worker {pid} exited with code -11 (signal)" in server.log

        with pytest.raises(httpx.HTTPError):  # the connection dies with the worker: what --isolate avoids
            httpx.post(f"{server.http_url}/v2/models/leaks/infer", json=body(1), timeout=30)
        assert wait_for_restarts(server, "memory", 1) == 1
        assert "over the limit of 250 MiB; killing it" in server.log
        assert len(pids_seen(server, "segfault", body(0), 2)) == 2


def test_isolation_serves_a_dialects_own_routes_and_grpc() -> None:
    """The model process runs the whole app: Seldon's REST route and gRPC service, unchanged."""
    import grpc
    from google.protobuf import json_format

    from inferd.protocols.seldon._generated import prediction_pb2 as pb
    from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
    from tests.dialects.seldon.conftest import COMPONENTS

    document = {"data": {"ndarray": [[1.0, 2.0]]}}
    here = {"PYTHONPATH": str(ROOT)}  # this checkout's inferd, though the cwd is the component's
    with serve("Identity", "--dialect", "seldon", "--isolate", cwd=COMPONENTS, env=here) as server:
        response = httpx.post(f"{server.http_url}/api/v1.0/predictions", json=document, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["ndarray"] == [[1.0, 2.0]]
        assert server.grpc_address is not None
        with grpc.insecure_channel(server.grpc_address) as channel:
            reply = pb_grpc.ModelStub(channel).Predict(json_format.ParseDict(document, pb.SeldonMessage()))
        assert json_format.MessageToDict(reply)["data"]["ndarray"] == [[1.0, 2.0]]
