"""--workers N: one pair of ports, N processes, dead workers replaced, metrics summed."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.conftest import TEST_MODELS
from tests.servers import RunningServer, answering_pid, pids_seen, serve, served

PID_REQUEST = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]}


two_workers = served(lambda: serve(str(TEST_MODELS / "native.py"), "--workers", "2"), scope="module")


def worker_pid(server: RunningServer) -> int:
    return answering_pid(server, "pid", PID_REQUEST)


def requests_total(server: RunningServer, model: str) -> float:
    text = httpx.get(f"{server.http_url}/metrics", timeout=30).text
    prefix = f'inferd_requests_total{{model="{model}",outcome="ok",protocol="rest"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


def test_both_workers_serve_the_same_port(two_workers: RunningServer) -> None:
    seen = pids_seen(two_workers, "pid", PID_REQUEST, 2)
    assert len(seen) == 2
    assert two_workers.process.pid not in seen


def test_metrics_add_up_across_workers(two_workers: RunningServer) -> None:
    before = requests_total(two_workers, "echo")
    for _ in range(20):
        response = httpx.post(f"{two_workers.http_url}/v2/models/echo/infer", json=PID_REQUEST, timeout=30)
        assert response.status_code == 200
    assert requests_total(two_workers, "echo") == before + 20


def test_a_dead_worker_is_replaced_and_the_other_keeps_serving(two_workers: RunningServer) -> None:
    first, second = pids_seen(two_workers, "pid", PID_REQUEST, 2)
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 60
    seen: set[int] = set()
    while time.monotonic() < deadline and len(seen - {second}) == 0:
        seen.add(worker_pid(two_workers))  # every request succeeds meanwhile
    replacement = seen - {first, second}
    assert first not in seen
    assert len(replacement) == 1
    assert any("starting a new one" in line for line in two_workers.stderr_lines)


def test_grpc_is_served_by_every_worker_on_one_port(two_workers: RunningServer) -> None:
    import numpy as np
    import tritonclient.grpc as triton_grpc

    assert two_workers.grpc_address is not None
    seen: set[int] = set()
    for _ in range(100):
        client = triton_grpc.InferenceServerClient(two_workers.grpc_address)  # a new connection each time
        tensor = triton_grpc.InferInput("x", [1], "INT32")
        tensor.set_data_from_numpy(np.array([1], dtype=np.int32))
        seen.add(int(client.infer("pid", [tensor]).as_numpy("pid")[0]))
        client.close()
        if len(seen) == 2:
            break
    assert len(seen) == 2


def test_the_metrics_directory_is_removed_on_shutdown(tmp_path: Path) -> None:
    """The server's temporary folder is the test's own, so no other server's metrics folder (one
    running beside it in another worker) is counted."""

    def metrics_dirs() -> set[Path]:
        return set(tmp_path.glob("inferd-metrics-*"))

    before = metrics_dirs()
    env = {"TMPDIR": str(tmp_path)}
    with serve(str(TEST_MODELS / "native.py"), "--workers", "2", "--no-grpc", env=env):
        created = metrics_dirs() - before
        assert len(created) == 1
    assert not created & metrics_dirs()
