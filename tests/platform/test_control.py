"""The platform end to end: ``inferd platform serve`` as its own process, driven by the ``inferd
platform`` verbs and its HTTP API: a deployment, two versions pushed from project folders, a service of
each, an endpoint switched from one to the other under load with no failed request, the control process
restarted with its services adopted, and the errors of bad requests."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.platform.control import Control, control, native_project
from tests.platform.gateway.grpc_support import GrpcLoad, infer
from tests.servers import ROOT

REQUEST = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}


def project(folder: Path, factor: float) -> Path:
    return native_project(
        folder,
        "scale",
        f"""
            import inferd

            class Scale(inferd.Model):
                def predict(self, inputs):
                    return {{"y": inputs["x"] * {factor}}}
        """,
    )


def wait_state(running: Control, service: str, state: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = running.call("GET", f"/services/{service}").json()
        if found["state"] == state:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def through(running: Control, endpoint: str = "main") -> float:
    answer = httpx.post(f"{running.gateway}/e/{endpoint}/v2/models/scale/infer", json=REQUEST, timeout=30)
    assert answer.status_code == 200, answer.text
    return float(answer.json()["outputs"][0]["data"][0])


def assert_host_checked(running: Control, endpoint: str = "main") -> None:
    """DNS rebinding: a page on another name that resolves to 127.0.0.1 reaches no endpoint (403 with
    inferd's JSON), while loopback names (``*.localhost`` among them, RFC 6761) are answered."""
    url = f"{running.gateway}/e/{endpoint}/v2/models/scale/infer"
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example"):
        refused = httpx.post(url, json=REQUEST, headers={"Host": host}, timeout=30)
        assert refused.status_code == 403, (host, refused.text)
        assert "is not a name this server answers" in refused.json()["error"]
    for host in ("localhost", "127.0.0.1:80", "[::1]", "app.localhost", "a.b.LOCALHOST:8000"):
        answer = httpx.post(url, json=REQUEST, headers={"Host": host}, timeout=30)
        assert answer.status_code == 200, (host, answer.text)


class Load:
    """Requests through the gateway from a thread, keeping every answer that was not 200."""

    def __init__(self, running: Control) -> None:
        self.running, self.answers, self.failures = running, [], []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with httpx.Client(timeout=30) as http:
            while not self.stop.is_set():
                answer = http.post(f"{self.running.gateway}/e/main/v2/models/scale/infer", json=REQUEST)
                if answer.status_code == 200:
                    self.answers.append(answer.json()["outputs"][0]["data"][0])
                else:
                    self.failures.append(answer.text)


@pytest.mark.parametrize(
    "data_path",
    [
        "gateway",
        pytest.param(
            "haproxy",
            marks=pytest.mark.skipif(shutil.which("haproxy") is None, reason="HAProxy is not installed"),
        ),
    ],
)
def test_deploy_switch_and_adopt(tmp_path: Path, short_path: Path, data_path: str) -> None:
    data = short_path / "data"  # HAProxy's sockets go in it
    with control(data, data_path, keep_services=True) as running:
        assert running.verb("create-deployment", "iris").returncode == 0
        versions = []
        for label, factor in (("1.0", 1.0), ("2.0", 2.0)):
            pushed = running.verb(
                "push", "iris", str(project(tmp_path / label, factor)), "--label", label, "--json"
            )
            assert pushed.returncode == 0, pushed.stderr
            versions.append(json.loads(pushed.stdout)["id"])
        services = []
        for version in versions:
            created = running.call("POST", "/deployments/iris/services", json={"version": version})
            assert created.status_code == 201, created.text
            services.append(created.json()["id"])
        first, second = (wait_state(running, service, "running") for service in services)
        assert first["port"] != second["port"]
        assert first["grpc_port"] and first["grpc_port"] != second["grpc_port"]

        assert running.verb("route", "iris", "main", f"{services[0]}=100").returncode == 0
        assert through(running) == 1.0
        assert_host_checked(running)
        assert infer(running.grpc, "main") == 1.0  # V2 gRPC through the same endpoint
        load = Load(running)
        load.thread.start()
        with GrpcLoad(running.grpc) as grpc_load:
            time.sleep(0.5)
            switched = running.verb("route", "iris", "main", f"{services[0]}=0", f"{services[1]}=100")
            assert switched.returncode == 0, switched.stderr
            time.sleep(0.5)
        load.stop.set()
        load.thread.join(30)
        assert load.failures == [] and 1.0 in load.answers and load.answers[-1] == 2.0
        assert grpc_load.failures == [] and 1.0 in grpc_load.answers and grpc_load.answers[-1] == 2.0
        assert through(running) == 2.0

        stopped = running.call("POST", f"/services/{services[0]}/stop")
        assert stopped.status_code == 200 and stopped.json()["state"] == "stopped"
        refused = running.call("POST", f"/services/{services[1]}/stop")
        assert refused.status_code == 409 and "endpoint" in refused.json()["error"]
        pid = running.call("GET", f"/services/{services[1]}").json()["pid"]

    with control(data, data_path) as again:  # a new control process adopts the running service
        adopted = wait_state(again, services[1], "running")
        assert adopted["pid"] == pid
        assert through(again) == 2.0
        assert infer(again.grpc, None) == 2.0  # its gRPC port was kept, and the only endpoint
        assert again.call("GET", f"/services/{services[0]}").json()["state"] == "stopped"
        listed = again.verb("services", "iris")
        assert services[1] in listed.stdout and "running" in listed.stdout
        assert str(adopted["grpc_port"]) in listed.stdout
        logs = again.call("GET", f"/services/{services[1]}/logs").json()["lines"]
        assert any("inferd ready" in line for line in logs)
        again.call(
            "PUT",
            "/deployments/iris/endpoints/main",
            json={"routes": [{"service": services[1], "weight": 100}]},
        )
        assert (
            again.call(
                "DELETE", f"/endpoints/{again.call('GET', '/deployments/iris/endpoints').json()[0]['id']}"
            ).status_code
            == 204
        )
        assert again.call("DELETE", f"/services/{services[1]}").status_code == 204


def archive_with(name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        member = tarfile.TarInfo(name)
        member.size = 1
        tar.addfile(member, io.BytesIO(b"x"))
    return buffer.getvalue()


def test_bad_requests_get_clear_errors_and_change_nothing(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.call("POST", "/deployments", json={"name": "iris"}).status_code == 201
        assert running.call("POST", "/deployments", json={"name": "iris"}).status_code == 409
        assert running.call("POST", "/deployments", json={"nme": "x"}).status_code == 400
        missing = running.call("GET", "/deployments/nope")
        assert missing.status_code == 404 and "nope" in missing.json()["error"]
        hostile = running.call(
            "POST",
            "/deployments/iris/versions",
            data={"label": "evil"},
            files={"archive": ("evil.tar.gz", archive_with("../evil.py"))},
        )
        assert hostile.status_code == 400 and "evil.py" in hostile.json()["error"]
        assert running.call("GET", "/deployments/iris/versions").json() == []
        weights = running.call(
            "PUT",
            "/deployments/iris/endpoints/main",
            json={"routes": [{"service": "svc-000000000000", "weight": 90}]},
        )
        assert weights.status_code in (400, 404), weights.text
        foreign = running.call(
            "POST", "/deployments", json={"name": "x"}, headers={"origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        assert running.call("GET", "/openapi.json").json()["paths"]["/platform/v1/deployments"]["post"]
        assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("weights", [[60, 30]])
def test_weights_must_sum_to_100(tmp_path: Path, weights: list[int]) -> None:
    with control(tmp_path / "data") as running:
        running.call("POST", "/deployments", json={"name": "iris"})
        folder = project(tmp_path / "p", 1.0)
        pushed = running.verb("push", "iris", str(folder), "--label", "1", "--json")
        version = json.loads(pushed.stdout)["id"]
        services = [
            running.call("POST", "/deployments/iris/services", json={"version": version}).json()["id"]
            for _ in weights
        ]
        for service in services:
            wait_state(running, service, "running")
        body = {
            "routes": [
                {"service": service, "weight": weight}
                for service, weight in zip(services, weights, strict=True)
            ]
        }
        refused = running.call("PUT", "/deployments/iris/endpoints/main", json=body)
        assert refused.status_code == 400 and "90" in refused.json()["error"]
        assert running.call("GET", "/deployments/iris/endpoints").json() == []
        for service in services:
            assert running.call("DELETE", f"/services/{service}").status_code == 204


def test_an_endpoint_switch_can_be_made_on_condition_that_nobody_switched_it_since(tmp_path: Path) -> None:
    """HTTP's conditional requests on an endpoint: its ``ETag`` (also ``etag`` in each record) names
    what it routes to; ``If-Match`` with a tag it no longer has, or ``If-None-Match: *`` once it
    exists, is 412 with the reason and changes nothing."""
    with control(tmp_path / "data") as running:
        running.call("POST", "/deployments", json={"name": "iris"})
        pushed = running.verb("push", "iris", str(project(tmp_path / "p", 1.0)), "--label", "1", "--json")
        version = json.loads(pushed.stdout)["id"]
        one, two = (
            running.call("POST", "/deployments/iris/services", json={"version": version}).json()["id"]
            for _ in range(2)
        )
        for service in (one, two):
            wait_state(running, service, "running")
        path = "/deployments/iris/endpoints/main"

        def switch(service: str, condition: dict[str, str]) -> httpx.Response:
            return running.call(
                "PUT", path, json={"routes": [{"service": service, "weight": 100}]}, headers=condition
            )

        created = switch(one, {"if-none-match": "*"})
        assert created.status_code == 200, created.text
        first_tag = created.headers["etag"]
        assert created.json()["etag"] == first_tag
        again = switch(two, {"if-none-match": "*"})
        assert again.status_code == 412 and "exists already" in again.json()["error"]

        switched = switch(two, {"if-match": first_tag})
        assert switched.status_code == 200, switched.text
        second_tag = switched.headers["etag"]
        assert second_tag != first_tag
        stale = switch(one, {"if-match": first_tag})
        assert stale.status_code == 412, stale.text
        assert "changed since it was read" in stale.json()["error"] and second_tag in stale.json()["error"]
        (endpoint,) = running.call("GET", "/deployments/iris/endpoints").json()
        assert [route["service_id"] for route in endpoint["routes"]] == [two]
        assert (
            running.call("GET", f"/endpoints/{endpoint['id']}").headers["etag"]
            == second_tag
            == endpoint["etag"]
        )
        assert through(running) == 1.0

        assert switch(one, {"if-match": f'"other", {second_tag}'}).status_code == 200  # one of a list
        assert switch(two, {}).status_code == 200  # no condition: as before
        missing = running.call(
            "PUT",
            "/deployments/iris/endpoints/canary",
            json={"routes": [{"service": one, "weight": 100}]},
            headers={"if-match": "*"},
        )
        assert missing.status_code == 412 and "does not exist" in missing.json()["error"]
        assert [e["name"] for e in running.call("GET", "/deployments/iris/endpoints").json()] == ["main"]
        paths = running.call("GET", "/openapi.json").json()["paths"]
        put = paths["/platform/v1/deployments/{deployment}/endpoints/{name}"]["put"]
        assert {"If-Match", "If-None-Match"} <= {parameter["name"] for parameter in put["parameters"]}
        assert "412" in put["responses"]


def test_a_bundle_goes_with_the_last_version_of_its_content(tmp_path: Path) -> None:
    """Versions of one content share one bundle file: deleting one version keeps it for the other,
    deleting the last (or its deployment) removes it; a version refused (its label taken) leaves
    no bundle of its own."""
    bundles = tmp_path / "data" / "platform" / "artifacts" / "sha256"
    with control(tmp_path / "data") as running:
        folder = project(tmp_path / "p", 1.0)
        for deployment in ("a", "b"):
            running.call("POST", "/deployments", json={"name": deployment})
        pushed = {
            deployment: json.loads(
                running.verb("push", deployment, str(folder), "--label", "1", "--json").stdout
            )
            for deployment in ("a", "b")
        }
        assert pushed["a"]["digest"] == pushed["b"]["digest"]
        shared = bundles / f"{pushed['a']['digest'].removeprefix('sha256:')}.tar.gz"
        assert [path.name for path in bundles.iterdir()] == [shared.name]

        (folder / "model.py").write_text((folder / "model.py").read_text().replace("1.0", "2.0"))
        clash = running.verb("push", "a", str(folder), "--label", "1")
        assert clash.returncode != 0 and "'1'" in clash.stderr + clash.stdout
        assert [path.name for path in bundles.iterdir()] == [shared.name]  # the refused one's is gone

        assert running.call("DELETE", f"/versions/{pushed['a']['id']}").status_code == 204
        assert shared.is_file()
        archive = running.call("GET", f"/versions/{pushed['b']['id']}/archive")
        assert archive.status_code == 200 and archive.content == shared.read_bytes()
        assert running.call("DELETE", "/deployments/b").status_code == 204
        assert list(bundles.iterdir()) == []
        assert running.call("GET", "/deployments/a").status_code == 200  # the other deployment stays


def test_the_quick_start_of_docs_platform_md_serves_the_example(tmp_path: Path) -> None:
    """docs/platform.md's first steps with the bundled example, whose project does not name its model:
    it is served under its deployment's name (the folder it was pushed from is not in the bundle;
    its service's folder was once the service's id, and so was the model's name)."""
    with control(tmp_path / "data") as running:
        assert running.verb("create-deployment", "iris").returncode == 0
        pushed = running.verb("push", "iris", str(ROOT / "examples" / "iris"), "--label", "1.0", "--json")
        version = json.loads(pushed.stdout)["id"]
        started = running.verb("start", "iris", version, "--json")
        service = wait_state(running, json.loads(started.stdout)["id"], "running")
        assert running.verb("route", "iris", "main", f"{service['id']}=100").returncode == 0
        request = (ROOT / "examples" / "iris" / "request.json").read_bytes()
        answer = httpx.post(
            f"{running.gateway}/e/main/v2/models/iris/infer",
            content=request,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["model_name"] == "iris" and answer.json()["outputs"][0]["shape"][0] == 2
