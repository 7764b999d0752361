"""Loads and unloads shared by the workers of a server: a unit test of the shared file, and a real
two-worker server whose repository calls reach one worker and hold for both."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

from inferd.core.control import SharedControl
from tests.servers import ROOT, serve

NATIVE = str(ROOT / "tests" / "models" / "native.py")

REQUEST = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]}


def test_each_worker_hears_of_the_others_calls_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "control.json"
    first, second = SharedControl(path), SharedControl(path)
    assert list(second.news()) == []
    first.record("a", "unload")
    first.record("b", "unload")
    first.record("a", "load")
    assert list(first.news()) == []  # its own calls are done already
    assert list(second.news()) == [("b", "unload"), ("a", "load")]  # a's last call only
    assert list(second.news()) == []
    second.record("b", "load")
    assert list(first.news()) == [("b", "load")]
    late = SharedControl(path)  # a worker started later catches up on every model
    assert list(late.news()) == [("a", "load"), ("b", "load")]


def answers(url: str, count: int = 24) -> set[int]:
    """The statuses of ``count`` requests of model pid, each on a new connection (so the kernel
    spreads them over the workers)."""
    return {httpx.post(f"{url}/v2/models/pid/infer", json=REQUEST).status_code for _ in range(count)}


def eventually(check: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the workers did not agree in time"
        time.sleep(0.2)


def test_an_unload_and_a_load_reach_every_worker() -> None:
    with serve(NATIVE, "--dialect", "native", "--workers", "2", "--no-grpc") as server:
        url = server.http_url
        assert answers(url) == {200}
        assert httpx.post(f"{url}/v2/repository/models/pid/unload").status_code == 200
        eventually(lambda: answers(url) == {503})
        assert httpx.post(f"{url}/v2/repository/models/pid/load").status_code == 200
        eventually(lambda: answers(url) == {200})
        pids = {
            httpx.post(f"{url}/v2/models/pid/infer", json=REQUEST).json()["outputs"][0]["data"][0]
            for _ in range(40)
        }
        assert len(pids) == 2  # both workers answered, each with its model loaded again
