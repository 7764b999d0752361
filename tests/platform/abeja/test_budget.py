"""The ABEJA-compatible API's service creation goes through the control process's process budget
(``INFERD_MAX_PROCESSES``): past it, a 409 in ABEJA's error shape naming the budget, what is in use
and the setting, and no service recorded or started."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tests.platform.abeja.conftest import control
from tests.platform.abeja.test_api import archive_with
from tests.platform.abeja.test_runs import HANDLER, ORG
from tests.platform.conftest import _processes_under


def test_a_service_past_the_budget_is_409_and_nothing_starts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data, INFERD_MAX_PROCESSES="2") as running:
        assert running.call("POST", f"{ORG}/deployments", json={"name": "big"}).status_code == 200
        created = running.call(
            "POST", f"{ORG}/deployments/big/versions", json={"version": "1", "handler": "main:handler"}
        )
        upload = urlsplit(created.json()["upload_url"])
        put = running.call(
            "PUT", f"{upload.path}?{upload.query}", token=None, content=archive_with("main.py", HANDLER)
        )
        assert put.status_code == 200, put.text
        body = {"version_id": created.json()["version_id"], "instance_number": 3}
        refused = running.call("POST", f"{ORG}/deployments/big/services", json=body)
        assert refused.status_code == 409, refused.text
        said = refused.json()
        assert said["error"] == "conflict", said
        assert "processes budget" in said["error_description"], said
        assert "2 of 2" not in said["error_description"] and "0 of 2" in said["error_description"], said
        assert "INFERD_MAX_PROCESSES=2" in said["error_description"], said
        assert running.call("GET", f"{ORG}/deployments/big/services").json()["entries"] == []
        assert not _processes_under(data)
