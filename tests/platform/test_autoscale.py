"""Autoscaling end to end: a service of one to three replicas behind an endpoint, driven by concurrent
requests through the gateway (or HAProxy), scales up (each new replica answers requests once ready),
scales back down after the load with no failed request, keeps its replicas across a restart of the
control process; and bad scaling settings get a 400 naming the field. Windows are short (settings)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.platform.control import Control, control, native_project

REQUEST = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
#: Sample often, average over a second, scale down after a second of lower recommendations.
FAST = {
    "INFERD_AUTOSCALE_INTERVAL": "0.1",
    "INFERD_AUTOSCALE_WINDOW": "1",
    "INFERD_AUTOSCALE_UPSCALE_DELAY": "0",
    "INFERD_AUTOSCALE_DOWNSCALE_DELAY": "1",
}


def project(folder: Path) -> Path:
    """A model answering which process served it, taking 20 ms a request."""
    return native_project(
        folder,
        "who",
        """
            import os
            import time

            import inferd

            class Who(inferd.Model):
                def predict(self, inputs):
                    time.sleep(0.02)
                    return {"pid": inputs["x"] * 0 + os.getpid()}
        """,
    )


class Load:
    """``clients`` threads sending requests through the endpoint; the pids that answered and every
    answer that was not 200."""

    def __init__(self, running: Control, clients: int) -> None:
        self.url = f"{running.gateway}/e/main/v2/models/who/infer"
        self.pids: list[int] = []
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(clients)]
        for thread in self.threads:
            thread.start()

    def run(self) -> None:
        with httpx.Client(timeout=30) as http:
            while not self.stop.is_set():
                try:
                    answer = http.post(self.url, json=REQUEST)
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                    continue
                if answer.status_code == 200:
                    self.pids.append(int(answer.json()["outputs"][0]["data"][0]))
                else:
                    self.failures.append(answer.text)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


def wait_for(running: Control, service: str, check: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = running.call("GET", f"/services/{service}").json()
        if check(found):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def scaled_service(running: Control, folder: Path, **scaling: Any) -> str:
    assert running.call("POST", "/deployments", json={"name": "who"}).status_code == 201
    pushed = running.verb("push", "who", str(folder), "--label", "1", "--json")
    assert pushed.returncode == 0, pushed.stderr
    version = running.call("GET", "/deployments/who/versions").json()[0]["id"]
    created = running.call("POST", "/deployments/who/services", json={"version": version, **scaling})
    assert created.status_code == 201, created.text
    service: str = created.json()["id"]
    wait_for(running, service, lambda s: s["state"] == "running")
    routed = running.call(
        "PUT", "/deployments/who/endpoints/main", json={"routes": [{"service": service, "weight": 100}]}
    )
    assert routed.status_code == 200, routed.text
    return service


@pytest.mark.parametrize(
    "data_path",
    [
        "gateway",
        pytest.param(
            "haproxy",
            marks=pytest.mark.skipif(
                not __import__("shutil").which("haproxy"), reason="haproxy is not installed"
            ),
        ),
    ],
)
def test_a_service_scales_up_under_load_and_down_after_it(
    tmp_path: Path, short_path: Path, data_path: str
) -> None:
    folder = project(tmp_path / "who")
    with control(short_path / "data", data_path, env=FAST) as running:  # HAProxy's sockets go in it
        service = scaled_service(running, folder, min_replicas=1, max_replicas=3, target_concurrency=1)
        load = Load(running, clients=6)
        try:
            scaled = wait_for(running, service, lambda s: s["ready_replicas"] == 3)
            assert scaled["replicas"] == 3
            replicas = running.call("GET", f"/services/{service}/replicas").json()
            assert sorted(r["number"] for r in replicas) == [1, 2]
            pids = {scaled["pid"], *(r["pid"] for r in replicas)}
            seen = len(load.pids)
            deadline = time.monotonic() + 30
            while not pids <= set(load.pids[seen:]) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert pids <= set(load.pids[seen:]), "every ready replica answers requests"
        finally:
            load.end()
        # a light load on while it scales down: the replicas leaving drain, nothing fails
        light = Load(running, clients=1)
        try:
            down = wait_for(running, service, lambda s: s["replicas"] == 1 and s["ready_replicas"] == 1)
            deadline = time.monotonic() + 30
            while running.call("GET", f"/services/{service}/replicas").json():  # stopping
                assert time.monotonic() < deadline
                time.sleep(0.1)
            seen = len(light.pids)
            time.sleep(0.5)
        finally:
            light.end()
        assert set(light.pids[seen:]) == {down["pid"]}
        assert load.failures == [] and light.failures == []
        listed = running.verb("services", "who")
        assert listed.returncode == 0 and "1/1" in listed.stdout, listed.stdout


def test_replicas_are_adopted_after_a_restart(tmp_path: Path) -> None:
    folder = project(tmp_path / "who")
    with control(tmp_path / "data", env=FAST, keep_services=True) as running:
        service = scaled_service(running, folder, min_replicas=2, max_replicas=2)
        before = wait_for(running, service, lambda s: s["ready_replicas"] == 2)
        replicas = running.call("GET", f"/services/{service}/replicas").json()
    with control(tmp_path / "data", env=FAST) as running:
        after = wait_for(running, service, lambda s: s["ready_replicas"] == 2)
        assert after["pid"] == before["pid"]
        assert [r["pid"] for r in running.call("GET", f"/services/{service}/replicas").json()] == [
            r["pid"] for r in replicas
        ]
        load = Load(running, clients=2)
        try:
            deadline = time.monotonic() + 30
            while len(set(load.pids)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            load.end()
        assert set(load.pids) == {before["pid"], replicas[0]["pid"]} and load.failures == []
        assert running.call("PUT", "/deployments/who/endpoints/main", json={"routes": []}).status_code == 400
        running.call(
            "DELETE", f"/endpoints/{running.call('GET', '/deployments/who/endpoints').json()[0]['id']}"
        )
        stopped = running.call("POST", f"/services/{service}/stop").json()
        assert (
            stopped["state"] == "stopped"
            and running.call("GET", f"/services/{service}/replicas").json() == []
        )


#: Bad scaling of a new service, and what its 400 names.
BAD_SCALING = [
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas (3) must not exceed max_replicas (2)"),
    ({"max_replicas": 0}, "max_replicas"),
    ({"min_replicas": 0, "max_replicas": 2}, "min_replicas"),
    ({"max_replicas": 2, "target_concurrency": -1}, "target_concurrency"),
    ({"min_replicas": 1, "max_replicas": 2, "replicas": 3}, "replicas (3)"),
]


def test_bad_scaling_gets_a_400_naming_the_field(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.call("POST", "/deployments", json={"name": "who"}).status_code == 201
        pushed = running.verb("push", "who", str(project(tmp_path / "who")), "--label", "1", "--json")
        assert pushed.returncode == 0, pushed.stderr
        version = running.call("GET", "/deployments/who/versions").json()[0]["id"]
        for scaling, field in BAD_SCALING:
            refused = running.call("POST", "/deployments/who/services", json={"version": version, **scaling})
            assert refused.status_code == 400 and field in refused.json()["error"], (scaling, refused.text)
        assert running.call("GET", "/deployments/who/services").json() == []
        bad = running.verb("scale", "svc-000000000000", "--min-replicas", "2", "--max-replicas", "1")
        assert bad.returncode != 0 and "svc-000000000000" in bad.stderr + bad.stdout, bad.stdout
