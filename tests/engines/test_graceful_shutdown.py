"""SIGTERM: stop accepting, let in-flight requests finish within the grace period, stop training jobs
with their records saved, and leave no process behind, with workers and model processes."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from inferd.core.jobs import STOPPED, JobStatus, JobStore
from inferd.core.processes import descendants
from tests.conftest import TEST_MODELS
from tests.dialects.deepaas.conftest import site_env
from tests.servers import RunningServer, serve

NATIVE = str(TEST_MODELS / "native.py")


def slow_request(seconds: float) -> dict[str, object]:
    return {"inputs": [{"name": "seconds", "shape": [1], "datatype": "FP32", "data": [seconds]}]}


def gone(pids: list[int], within: float = 5.0) -> bool:
    """No process of ``pids`` runs, at the latest ``within`` seconds from now; a zombie has ended (an
    init that does not reap, as in some containers, leaves the multiprocessing resource tracker as
    one). The wait is for that tracker too: it exits on its own once the server has, not before."""

    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return False
        return state != b"Z"

    deadline = time.monotonic() + within
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_in_flight(server: RunningServer, model: str) -> None:
    """Until the model counts a request in flight (summed over every process)."""
    prefix = f'inferd_requests_in_flight{{model="{model}",protocol="rest"}} '
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = httpx.get(f"{server.http_url}/metrics", timeout=30).text
        if any(line.startswith(prefix) and float(line[len(prefix) :]) >= 1 for line in text.splitlines()):
            return
        time.sleep(0.05)
    raise AssertionError(f"no request to {model} in flight")


def slow_call_in_flight(
    server: RunningServer, seconds: float
) -> tuple[threading.Thread, list[httpx.Response]]:
    """A thread calling the ``slow`` model for ``seconds``, returned once the call is in flight, and
    the list its answer will be put in."""
    answers: list[httpx.Response] = []
    url = f"{server.http_url}/v2/models/slow/infer"
    caller = threading.Thread(
        target=lambda: answers.append(httpx.post(url, json=slow_request(seconds), timeout=30))
    )
    caller.start()
    wait_in_flight(server, "slow")
    return caller, answers


def test_sigterm_drains_isolated_workers_and_refuses_new_connections() -> None:
    with serve(NATIVE, "--isolate", "--workers", "2", env={"INFERD_GRACEFUL_TIMEOUT": "20"}) as server:
        tree = descendants(server.process.pid)
        assert len(tree) >= 4  # two workers and their model processes
        caller, answers = slow_call_in_flight(server, 4)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(1)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.http_url}/v2/health/ready", timeout=5)
        caller.join(timeout=30)
        assert server.process.wait(timeout=30) == 0
    assert answers and answers[0].status_code == 200
    assert answers[0].json()["outputs"][0]["data"] == [True]
    assert gone(tree)


def test_the_grace_period_bounds_the_drain() -> None:
    with serve(NATIVE, "--isolate", env={"INFERD_GRACEFUL_TIMEOUT": "1"}) as server:
        answers: list[httpx.Response | Exception] = []
        url = f"{server.http_url}/v2/models/slow/infer"

        def call() -> None:
            try:
                answers.append(httpx.post(url, json=slow_request(60), timeout=60))
            except httpx.HTTPError as exc:
                answers.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        wait_in_flight(server, "slow")
        stopped = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
        assert time.monotonic() - stopped < 15
        caller.join(timeout=30)
    assert answers and not (isinstance(answers[0], httpx.Response) and answers[0].status_code == 200)


def test_sigterm_stops_training_jobs_and_saves_their_records(tmp_path: Path) -> None:
    args = ("--dialect", "deepaas", "--model-name", "classy", "--data-dir", str(tmp_path))
    with serve("", *args, "--isolate", "--workers", "2", env=site_env()) as server:
        before = set(descendants(server.process.pid))
        record = httpx.post(
            f"{server.http_url}/v2/models/classy/train/", params={"epochs": "1", "seconds": "60"}, timeout=30
        ).json()
        assert record["status"] == "running"
        deadline = time.monotonic() + 30
        while not set(descendants(server.process.pid)) - before and time.monotonic() < deadline:
            time.sleep(0.1)
        jobs = list(set(descendants(server.process.pid)) - before)
        assert jobs  # the training process, under a model process
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    assert gone(jobs) and gone(list(before))
    store = JobStore(tmp_path / "deepaas-jobs.sqlite3")
    try:
        saved = store.get("classy", record["uuid"])
    finally:
        store.close()
    assert saved is not None and saved.status is JobStatus.ERROR and saved.message == STOPPED
