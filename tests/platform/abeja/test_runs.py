"""ABEJA's runs and triggers over HTTP: a run of a handler version over a DataLake channel's file (a
folder under the data dir), an absolute path and a trigger's channel, and the bad requests that are
refused and create nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.platform.abeja.conftest import Control, control
from tests.platform.abeja.test_api import archive_with

ORG = "/organizations/2345678901234"
HANDLER = b"""
import json
import os


def handler(request, context):
    asked = json.load(request)
    content = {"asked": asked, "colour": os.environ.get("COLOUR")}
    return {"status_code": 200, "content_type": "application/json", "content": content}
"""


@dataclass
class Setup:
    running: Control
    datalake: Path
    version: str

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.running.call(method, f"{ORG}/deployments/batch{path}", **kwargs)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    data = tmp_path_factory.mktemp("abeja-runs") / "data"
    with control(data, INFERD_TRIGGER_POLL_SECONDS="0.2") as running:
        assert running.call("POST", f"{ORG}/deployments", json={"name": "batch"}).status_code == 200
        created = running.call(
            "POST", f"{ORG}/deployments/batch/versions", json={"version": "1", "handler": "main:handler"}
        )
        upload = urlsplit(created.json()["upload_url"])
        put = running.call(
            "PUT", f"{upload.path}?{upload.query}", token=None, content=archive_with("main.py", HANDLER)
        )
        assert put.status_code == 200, put.text
        yield Setup(running, (data / "platform" / "datalake").resolve(), created.json()["version_id"])


def finished(setup: Setup, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        run: dict[str, Any] = setup.call("GET", f"/runs/{run_id}").json()
        if run["status"] in ("SUCCEEDED", "FAILED"):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


def test_a_run_reads_a_channel_file_and_writes_the_output_channel(setup: Setup) -> None:
    channel = setup.datalake / "1111111111111"
    channel.mkdir(parents=True)
    (channel / "a.json").write_text(json.dumps({"name": "a"}))
    answer = setup.call(
        "POST",
        "/runs",
        json={
            "version_id": setup.version,
            "input_data": {"$datalake:1": "1111111111111/a.json"},
            "output_template": {"$datalake:1": "2222222222222"},
            "retry_count": 5,
            "environment": {"COLOUR": "green"},
        },
    )
    assert answer.status_code == 200, answer.text
    submitted = answer.json()
    assert submitted["status"] in ("PENDING", "RUNNING") and submitted["model_version"] == "1"
    assert submitted["input_data"] == {"$datalake:1": "1111111111111/a.json"}
    assert submitted["output_template"] == {"$datalake:1": "2222222222222"}
    assert submitted["user_env_vars"] == {"COLOUR": "green"}
    run = finished(setup, submitted["run_id"])
    assert run["status"] == "SUCCEEDED", run
    written = json.loads((setup.datalake / "2222222222222" / "a.json").read_text())
    assert written == {"asked": {"name": "a"}, "colour": "green"}
    listed = setup.call("GET", "/runs").json()["entries"]
    assert submitted["run_id"] in [entry["run_id"] for entry in listed]
    events = setup.call("GET", f"/runs/{run['run_id']}/logs").json()["events"]
    assert any("a.json" in event["message"] for event in events), events


def test_a_run_of_an_absolute_path_without_output_writes_a_folder_of_its_own(
    setup: Setup, tmp_path: Path
) -> None:
    (tmp_path / "b.json").write_text(json.dumps({"name": "b"}))
    answer = setup.call(
        "POST",
        "/runs",
        json={"version_id": setup.version, "input_data": {"$datalake:1": str(tmp_path / "b.json")}},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["output_template"] is None
    run = finished(setup, answer.json()["run_id"])
    assert run["status"] == "SUCCEEDED", run
    assert json.loads((Path(run["output"]) / "b.json").read_text())["asked"] == {"name": "b"}


def test_a_trigger_runs_each_new_file_of_its_channel(setup: Setup) -> None:
    created = setup.call(
        "POST",
        "/triggers",
        json={
            "version_id": setup.version,
            "input_service_name": "datalake",
            "input_service_id": "3333333333333",
            "output_service_name": "datalake",
            "output_service_id": "4444444444444",
            "retry_count": 5,
            "environment": {"COLOUR": "red"},
        },
    )
    assert created.status_code == 200, created.text
    trigger = created.json()
    assert trigger["input_service_id"] == "3333333333333" and trigger["user_env_vars"] == {"COLOUR": "red"}
    (setup.datalake / "3333333333333" / "c.json").write_text(json.dumps({"name": "c"}))
    answer = setup.datalake / "4444444444444" / "c.json"
    deadline = time.monotonic() + 60
    while not answer.exists():
        assert time.monotonic() < deadline
        time.sleep(0.2)
    (run,) = setup.call("GET", f"/triggers/{trigger['trigger_id']}/runs").json()["entries"]
    assert finished(setup, run["run_id"])["status"] == "SUCCEEDED"
    assert json.loads(answer.read_text()) == {"asked": {"name": "c"}, "colour": "red"}
    listed = setup.call("GET", "/triggers").json()["entries"]
    assert [entry["trigger_id"] for entry in listed] == [trigger["trigger_id"]]
    deleted = setup.call("DELETE", f"/triggers/{trigger['trigger_id']}")
    assert deleted.json() == {"message": f"{trigger['trigger_id']} deleted"}
    assert setup.call("GET", f"/triggers/{trigger['trigger_id']}").status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/runs", {"input_data": {"$datalake:1": "1/2"}}, "version_id"),
        ("/runs", {"version_id": "VERSION"}, "input_data is required"),
        ("/runs", {"version_id": "VERSION", "input_data": {"$bucket:1": "1/2"}}, "'$bucket:1'"),
        ("/runs", {"version_id": "VERSION", "input_data": {"$datalake:1": "../etc/passwd"}}, "CHANNEL/FILE"),
        (
            "/runs",
            {"version_id": "VERSION", "input_data": {"$datalake:1": "9/missing.json"}},
            "does not exist",
        ),
        (
            "/runs",
            {
                "version_id": "VERSION",
                "input_data": {"$datalake:1": "/"},
                "output_template": {"a": "1", "b": "2"},
            },
            "names one output",
        ),
        (
            "/runs",
            {"version_id": "VERSION", "input_data": {"$datalake:1": "/"}, "environment": {"1A": "x"}},
            "environment",
        ),
        (
            "/runs",
            {"version_id": "VERSION", "input_data": {"$datalake:1": "/"}, "retry_count": 10},
            "retry_count",
        ),
        (
            "/triggers",
            {"version_id": "VERSION", "input_service_name": "bucket", "input_service_id": "1"},
            "'datalake' only",
        ),
        (
            "/triggers",
            {
                "version_id": "VERSION",
                "input_service_name": "datalake",
                "input_service_id": "5",
                "output_service_name": "datalake",
            },
            "go together",
        ),
        (
            "/triggers",
            {"version_id": "VERSION", "input_service_name": "datalake", "input_service_id": "/nowhere/x"},
            "nowhere",
        ),
    ],
)
def test_bad_runs_and_triggers_are_400_and_create_nothing(
    setup: Setup, path: str, body: dict[str, Any], said: str
) -> None:
    runs_before = setup.call("GET", "/runs").json()["entries"]
    text = json.dumps(body).replace("VERSION", setup.version)
    answer = setup.call("POST", path, content=text, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "bad_request" and said in answer.json()["error_description"]
    assert setup.call("GET", "/runs").json()["entries"] == runs_before
    assert setup.call("GET", "/triggers").json()["entries"] == []


def test_unknown_runs_versions_and_triggers_are_404(setup: Setup) -> None:
    for path in ("/runs/run-000000000000", "/runs/run-000000000000/logs", "/triggers/trg-000000000000"):
        answer = setup.call("GET", path)
        assert answer.status_code == 404 and answer.json()["error"] == "not_found", path
    unknown = setup.call(
        "POST", "/runs", json={"version_id": "ver-000000000000", "input_data": {"$datalake:1": "/"}}
    )
    assert unknown.status_code == 404, unknown.text
