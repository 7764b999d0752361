"""Services on the Ray engine: ``inferd platform start --engine ray`` runs a version as ``inferd serve
--engine ray``, supervised like a local one. Two services share one Ray cluster (``INFERD_RAY_ADDRESS``,
a cluster this test starts): each is a Ray Serve application of its own, ``inferd-<deployment>-<service>``
at that route prefix, its port forwarding there; each answers through its endpoint, and stopping one
deletes its application alone, the other serving on. The cluster got each version's code shipped
(Ray's ``working_dir``): the model's module was imported from the copy Ray unpacked, not from the
version's folder. One test: Ray is slow to start.

Runs wherever ray is importable; CI installs it (the ``ray`` extra is part of ``dev``)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.platform.control import native_project
from tests.platform.test_control import REQUEST, Control, control, through, wait_state
from tests.servers import free_port, with_this_tree

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")

#: A Ray cluster held by a process of its own (on loopback, no dashboard, no usage report), until its
#: standard input closes. Ray asks for its token (``~/.ray/auth_token``) from every process joining a
#: cluster: ``RAY_AUTH_MODE=token`` for the cluster and the services.
CLUSTER = textwrap.dedent("""
    import sys
    import ray

    ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=sys.argv[1], num_cpus=4, logging_level="WARNING")
    print(ray.get_runtime_context().gcs_address, flush=True)
    sys.stdin.read()
    ray.shutdown()
""")

TOKEN = {"RAY_AUTH_MODE": "token"}


@contextmanager
def ray_cluster() -> Iterator[str]:
    """A Ray cluster of this test's own; its address. (Never ``ray stop``: it stops every Ray here.)"""
    with tempfile.TemporaryDirectory(prefix="inferd-ray-", ignore_cleanup_errors=True) as temp_dir:
        environment = with_this_tree({**os.environ, **TOKEN, "RAY_USAGE_STATS_ENABLED": "0"})
        holder = subprocess.Popen(
            [sys.executable, "-c", CLUSTER, temp_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            address = holder.stdout.readline().strip()
            assert address, "the Ray cluster did not start"
            yield address
        finally:
            holder.stdin.close()
            holder.wait(60)
            holder.stdout.close()


def project(folder: Path, factor: float) -> Path:
    """The platform tests' scaling model, also answering where its module was imported from."""
    model = f"""
        import inferd

        class Scale(inferd.Model):
            def predict(self, inputs):
                return {{"y": inputs["x"] * {factor}, "file": [__file__]}}
    """
    return native_project(folder, "scale", model)


def imported_from(running: Control, endpoint: str) -> str:
    answer = httpx.post(f"{running.gateway}/e/{endpoint}/v2/models/scale/infer", json=REQUEST, timeout=30)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["outputs"][1]["data"][0])


def start(running: Control, folder: Path, factor: float) -> dict[str, object]:
    pushed = running.verb("push", "iris", str(project(folder, factor)), "--label", str(factor), "--json")
    assert pushed.returncode == 0, pushed.stderr
    started = running.verb("start", "iris", json.loads(pushed.stdout)["id"], "--engine", "ray", "--json")
    assert started.returncode == 0, started.stderr
    service: dict[str, object] = json.loads(started.stdout)
    assert service["engine"] == "ray"
    return service


def test_ray_services_share_a_cluster_each_its_own_application(tmp_path: Path) -> None:
    with ray_cluster() as address:
        env = {**TOKEN, "INFERD_RAY_ADDRESS": address, "INFERD_RAY_PROXY_PORT": str(free_port())}
        with control(tmp_path / "data", env=env) as running:
            assert running.verb("create-deployment", "iris").returncode == 0
            refused = running.call(
                "POST", "/deployments/iris/services", json={"version": "x", "engine": "spark"}
            )
            assert refused.status_code == 400 and "engine" in refused.json()["error"], refused.text

            three, five = start(running, tmp_path / "three", 3.0), start(running, tmp_path / "five", 5.0)
            found = wait_state(running, str(three["id"]), "running", timeout=240)
            wait_state(running, str(five["id"]), "running", timeout=240)
            logs = running.call("GET", f"/services/{three['id']}/logs?lines=1000").json()["lines"]
            application = f"inferd-iris-{three['id']}"
            assert any(f"--engine ray --replicas 1 --ray-app-name {application}" in line for line in logs), (
                logs
            )

            assert running.verb("route", "iris", "main", f"{three['id']}=100").returncode == 0
            assert running.verb("route", "iris", "other", f"{five['id']}=100").returncode == 0
            assert through(running, "main") == 3.0 and through(running, "other") == 5.0
            shipped = Path(imported_from(running, "main"))  # under the cluster's session folder
            assert shipped.name == "model.py" and "runtime_resources" in shipped.parts, shipped
            assert not shipped.is_relative_to(tmp_path), shipped  # not the version's folder
            direct = httpx.get(f"http://127.0.0.1:{found['port']}/v2/health/ready", timeout=30)
            assert direct.status_code == 200  # its port forwards to its application's prefix

            endpoints = running.call("GET", "/deployments/iris/endpoints").json()
            main = next(endpoint["id"] for endpoint in endpoints if endpoint["name"] == "main")
            assert running.call("DELETE", f"/endpoints/{main}").status_code == 204
            stopped = running.call("POST", f"/services/{three['id']}/stop")
            assert stopped.status_code == 200 and stopped.json()["state"] == "stopped", stopped.text
            with pytest.raises(httpx.HTTPError):
                httpx.get(f"http://127.0.0.1:{found['port']}/v2/health/ready", timeout=5)
            assert through(running, "other") == 5.0  # its application was left alone
