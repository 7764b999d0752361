"""The control process's budget of processes (``INFERD_MAX_PROCESSES``), against a real control
process: a service asking for more processes than the budget (up to 64 replicas of 64 workers) gets a
409 naming the budget, what is in use and the setting, with nothing recorded or started and the
control process still serving; a scale up past it is refused while one within it goes; a run past
it is refused; the autoscaler stops at it under load."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.platform.conftest import _processes_under
from tests.platform.control import Control, control
from tests.platform.test_autoscale import FAST, Load, project, wait_for

LIMIT = 3


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def refused_for_budget(answer: httpx.Response, in_use: int, asked: int) -> None:
    assert answer.status_code == 409, answer.text
    body: dict[str, Any] = answer.json()
    assert body["budget"] == "processes" and body["setting"] == "INFERD_MAX_PROCESSES", body
    assert (body["in_use"], body["asked"], body["limit"]) == (in_use, asked, LIMIT), body
    assert "INFERD_MAX_PROCESSES" in body["error"] and "budget" in body["error"], body


def pushed(running: Control, folder: Path) -> str:
    assert running.call("POST", "/deployments", json={"name": "who"}).status_code == 201
    done = running.verb("push", "who", str(folder), "--label", "1", "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def test_services_scale_ups_and_runs_past_the_budget_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data, env={"INFERD_MAX_PROCESSES": str(LIMIT)}) as running:
        version = pushed(running, project(tmp_path / "who"))
        services = "/deployments/who/services"
        before = rss_kib(running.process.pid)
        started = time.monotonic()
        # 2 replicas of a supervisor and 4 workers: 10 processes; then 64 x (64 + 1)
        small = {"version": version, "min_replicas": 2, "max_replicas": 2, "workers": 4}
        refused_for_budget(running.call("POST", services, json=small), 0, 10)
        huge = {"version": version, "min_replicas": 64, "max_replicas": 64, "workers": 64}
        refused_for_budget(running.call("POST", services, json=huge), 0, 64 * 65)
        assert time.monotonic() - started < 5
        assert rss_kib(running.process.pid) - before < 20 * 1024
        assert running.call("GET", services).json() == []  # nothing recorded
        assert not _processes_under(data)  # nothing started
        assert not list((data / "platform" / "services").glob("*"))
        assert running.call("GET", "/deployments").status_code == 200  # still serving

        # one within it: 1 process, scalable to 8
        created = running.call("POST", services, json={"version": version, "max_replicas": 8})
        assert created.status_code == 201, created.text
        service = created.json()["id"]
        wait_for(running, service, lambda s: s["state"] == "running")
        scaling = f"/services/{service}/scaling"
        refused_for_budget(running.call("PUT", scaling, json={"max_replicas": 8, "replicas": 8}), 1, 7)
        found = running.call("GET", f"/services/{service}").json()
        assert found["replicas"] == 1 and running.call("GET", f"/services/{service}/replicas").json() == []
        grown = running.call("PUT", scaling, json={"max_replicas": 8, "replicas": LIMIT})
        assert grown.status_code == 200, grown.text

        # the budget is full: a run is refused too
        given = tmp_path / "in.json"
        given.write_text(json.dumps({"x": [1.0]}))
        run = {"version": version, "inputs": [str(given)], "output": str(tmp_path / "out")}
        refused_for_budget(running.call("POST", "/deployments/who/runs", json=run), LIMIT, 1)
        assert running.call("GET", "/deployments/who/runs").json() == []
        wait_for(running, service, lambda s: s["ready_replicas"] == LIMIT)


def test_the_autoscaler_stops_at_the_budget(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = tmp_path / "control.log"
    env = {**FAST, "INFERD_MAX_PROCESSES": "2"}
    with control(data, env=env, output=log) as running:
        version = pushed(running, project(tmp_path / "who"))
        body = {"version": version, "min_replicas": 1, "max_replicas": 4, "target_concurrency": 1}
        created = running.call("POST", "/deployments/who/services", json=body)
        assert created.status_code == 201, created.text
        service = created.json()["id"]
        wait_for(running, service, lambda s: s["state"] == "running")
        routes = {"routes": [{"service": service, "weight": 100}]}
        assert running.call("PUT", "/deployments/who/endpoints/main", json=routes).status_code == 200
        load = Load(running, clients=6)
        try:
            wait_for(running, service, lambda s: s["ready_replicas"] >= 2)
            time.sleep(2)  # 6 in flight at 1 a replica asks for 4: it stays at 2
            assert running.call("GET", f"/services/{service}").json()["replicas"] == 2
        finally:
            load.end()
        assert not load.failures, load.failures[:3]
        said = log.read_text()
        assert "the process budget is reached" in said and "INFERD_MAX_PROCESSES" in said, said[-2000:]
        assert "Traceback" not in said
