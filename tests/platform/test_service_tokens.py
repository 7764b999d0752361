"""Services and runs do not hold the control process's admin token: each service's processes (every
replica) take a token of their own in ``INFERD_AUTH_TOKENS``, which the gateway (HTTP and gRPC), the
metrics and the one-off server of a run present after checking the client's own; a client's admin or
user token still goes through the gateway, and a service refuses the admin token sent to it
directly."""

from __future__ import annotations

import io
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tritonclient.utils import InferenceServerException

from tests.platform.control import Control, control
from tests.platform.gateway.grpc_support import infer
from tests.platform.runs.test_runs import FINAL, inputs, slow
from tests.platform.test_control import project

ADMIN = "admin-token-f00d"
USER = "user-token-beef"
REQUEST = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def call(running: Control, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return running.call(method, path, headers=auth(ADMIN), **kwargs)


def pushed(running: Control, folder: Path, label: str) -> str:
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as archive:
        for path in sorted(folder.iterdir()):
            archive.add(path, path.name)
    answer = call(
        running,
        "POST",
        "/deployments/app/versions",
        data={"label": label},
        files={"archive": ("v.tar.gz", packed.getvalue())},
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def wait_service(running: Control, service: str, ready: int) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        found: dict[str, Any] = call(running, "GET", f"/services/{service}").json()
        if found["state"] == "running" and found["ready_replicas"] == ready:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


@pytest.mark.parametrize(
    "data_path",
    [
        "gateway",
        pytest.param(
            "haproxy",
            marks=pytest.mark.skipif(not shutil.which("haproxy"), reason="haproxy is not installed"),
        ),
    ],
)
def test_services_and_runs_get_their_own_token_not_the_admins(
    tmp_path: Path, short_path: Path, data_path: str
) -> None:
    data = short_path / "data"  # HAProxy's sockets need a short path
    env = {"INFERD_AUTH_TOKENS": f"{ADMIN},{USER}"}
    with control(data, data_path, env=env) as running:
        assert call(running, "POST", "/deployments", json={"name": "app"}).status_code == 201
        version = pushed(running, project(tmp_path / "scale", 2.0), "1")
        body = {"version": version, "min_replicas": 2, "max_replicas": 2}
        created = call(running, "POST", "/deployments/app/services", json=body)
        assert created.status_code == 201, created.text
        service = wait_service(running, created.json()["id"], 2)
        routes = {"routes": [{"service": service["id"], "weight": 100}]}
        assert call(running, "PUT", "/deployments/app/endpoints/main", json=routes).status_code == 200

        # no process of the service has the admin token (nor the user's); each has a token
        replicas = call(running, "GET", f"/services/{service['id']}/replicas").json()
        pids = [service["pid"], *(replica["pid"] for replica in replicas)]
        assert len(pids) == 2 and all(pids)
        for pid in pids:
            said = environ(pid)
            assert ADMIN.encode() not in said and USER.encode() not in said
            assert b"\0INFERD_AUTH_TOKENS=" in said

        # clients' tokens still go through the gateway, which presents the service's own
        url = f"{running.gateway}/e/main/v2/models/scale/infer"
        for token in (ADMIN, USER):
            answer = httpx.post(url, json=REQUEST, headers=auth(token), timeout=30)
            assert answer.status_code == 200, answer.text
            assert answer.json()["outputs"][0]["data"] == [2.0]
            assert infer(running.grpc, "main", authorization=f"Bearer {token}") == 2.0
        assert httpx.post(url, json=REQUEST, timeout=30).status_code == 401
        assert httpx.post(url, json=REQUEST, headers=auth("wrong"), timeout=30).status_code == 401
        with pytest.raises(InferenceServerException, match=r"(?i)unauthenticated|token"):
            infer(running.grpc, "main")
        # the admin token sent to the service itself is refused
        direct = f"http://127.0.0.1:{service['port']}/v2/models/scale/infer"
        assert httpx.post(direct, json=REQUEST, headers=auth(ADMIN), timeout=30).status_code == 401
        # the control process's calls to it present its token too
        metrics = call(running, "GET", f"/services/{service['id']}/metrics").json()
        assert metrics["metrics"] is not None, metrics

        # a run's process: its own token, which its one-off server takes
        given = [str(path) for path in inputs(tmp_path / "in", 1)]
        run = {"version": version, "inputs": given, "output": str(tmp_path / "out")}
        done = call(running, "POST", "/deployments/app/runs", json=run).json()
        deadline = time.monotonic() + 90
        while done["state"] not in FINAL:
            assert time.monotonic() < deadline, done
            time.sleep(0.2)
            done = call(running, "GET", f"/runs/{done['id']}").json()
        assert done["state"] == "succeeded", done
        sleepy = pushed(running, slow(tmp_path / "slow"), "slow")
        hung = call(running, "POST", "/deployments/app/runs", json={**run, "version": sleepy}).json()
        pid_file = data / "platform" / "runs" / f"{hung['id']}.pid"
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        said = environ(int(pid_file.read_text().split(":", 1)[0]))
        assert ADMIN.encode() not in said and b"\0INFERD_AUTH_TOKENS=" in said
        assert call(running, "POST", f"/runs/{hung['id']}/cancel").status_code == 200
