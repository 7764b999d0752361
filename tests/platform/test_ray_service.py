"""A service on the Ray engine: ``inferd platform start --engine ray`` runs its version as ``inferd
serve --engine ray`` (a local Ray of its own), supervised like a local one: running, answering through
an endpoint, stopped with its Ray. One test: Ray is slow to start.

Runs wherever ray is importable; CI installs it (the ``ray`` extra is part of ``dev``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest

from tests.platform.test_control import control, project, through, wait_state

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")


def test_a_ray_service_serves_through_an_endpoint_and_stops(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.verb("create-deployment", "iris").returncode == 0
        pushed = running.verb("push", "iris", str(project(tmp_path / "scale", 3.0)), "--label", "1", "--json")
        assert pushed.returncode == 0, pushed.stderr
        version = json.loads(pushed.stdout)["id"]
        refused = running.call(
            "POST", "/deployments/iris/services", json={"version": version, "engine": "spark"}
        )
        assert refused.status_code == 400 and "engine" in refused.json()["error"], refused.text

        started = running.verb("start", "iris", version, "--engine", "ray", "--json")
        assert started.returncode == 0, started.stderr
        service = json.loads(started.stdout)
        assert service["engine"] == "ray"
        found = wait_state(running, service["id"], "running", timeout=240)
        logs = running.call("GET", f"/services/{service['id']}/logs?lines=1000").json()["lines"]
        assert any("--engine ray --replicas 1" in line for line in logs), logs

        assert running.verb("route", "iris", "main", f"{service['id']}=100").returncode == 0
        assert through(running) == 3.0
        direct = httpx.get(f"http://127.0.0.1:{found['port']}/v2/health/ready", timeout=30)
        assert direct.status_code == 200

        assert (
            running.call(
                "DELETE", f"/endpoints/{running.call('GET', '/deployments/iris/endpoints').json()[0]['id']}"
            ).status_code
            == 204
        )
        stopped = running.call("POST", f"/services/{service['id']}/stop")
        assert stopped.status_code == 200 and stopped.json()["state"] == "stopped", stopped.text
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{found['port']}/v2/health/ready", timeout=5)
