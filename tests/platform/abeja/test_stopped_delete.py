"""A service stopped before the control process restarted is deleted like a live one (issue 43 item
5): ``abeja model delete-service`` and the control API's ``DELETE /services/ID`` answered 404 ``no
service svc-... on this runner`` for a service ``describe-services`` listed as STOPPED, and its
folder stayed. Both are walked with the published abejacli against a real control process started
twice over the same data folder; each deletion takes its record, its folder and its log files."""

from __future__ import annotations

import time
from pathlib import Path

from tests.platform.abeja.conftest import control
from tests.platform.abeja.test_cli import HANDLER, Abeja


def wait_ready(abeja: Abeja, deployment: str, service: str) -> None:
    deadline = time.monotonic() + 90
    while (status := abeja.json("describe-services", "-d", deployment, "-s", service)["status"]) != "READY":
        assert status == "IN_PROGRESS" and time.monotonic() < deadline, status
        time.sleep(0.5)


def test_a_service_stopped_before_a_restart_is_deleted(abeja_cli: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text(HANDLER)
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data"
    with control(data) as running, Abeja(abeja_cli, running, home) as abeja:
        dep = abeja.json("create-deployment", "-n", "greeter")["deployment_id"]
        ver = abeja.json(
            "create-deployment-version",
            *("-d", dep, "-v", "0.0.1", "-i", "abeja-inc/all-cpu:19.10", "-h", "main:handler"),
            cwd=project,
        )["version_id"]
        services = [abeja.json("create-service", "-d", dep, "-v", ver)["service_id"] for _ in range(2)]
        for svc in services:
            wait_ready(abeja, dep, svc)
            assert abeja.json("stop-service", "-d", dep, "-s", svc)["message"] == f"{svc} stopped"
    root = data / "platform"
    for svc in services:  # what a deletion must take
        assert (root / "services" / svc).is_dir()
        assert (root / "logs" / f"{svc}.log").is_file()

    with control(data) as running, Abeja(abeja_cli, running, home) as abeja:
        by_cli, by_api = services
        for svc in services:
            assert abeja.json("describe-services", "-d", dep, "-s", svc)["status"] == "STOPPED"

        started = time.monotonic()
        deleted = abeja.run("delete-service", "-d", dep, "-s", by_cli, ok=False)
        assert deleted.returncode == 0, deleted.stdout + deleted.stderr
        assert f"{by_cli} deleted" in deleted.stdout
        answer = running.call("DELETE", f"/platform/v1/services/{by_api}")
        assert answer.status_code == 204, answer.text
        assert time.monotonic() - started < 10  # nothing to stop: no grace period waited out

        assert abeja.json("describe-services", "-d", dep)["entries"] == []
        gone = running.call("GET", f"/platform/v1/services/{by_api}")
        assert gone.status_code == 404 and by_api in gone.json()["error"]
        for svc in services:
            assert not (root / "services" / svc).exists()
            assert list((root / "logs").glob(f"{svc}*")) == []
        # and the deployment's last version goes, as after deleting live services
        abeja.json("delete-deployment-version", "-d", dep, "-v", ver)
        abeja.json("delete-deployment", "-d", dep)
