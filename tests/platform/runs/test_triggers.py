"""Triggers end to end: a run for each new file dropped into a folder, one per file across a restart
of the control process, which fails the runs it left running; disabled and deleted triggers start no
more runs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.platform.runs.test_runs import alive, push, slow, wait_run
from tests.platform.test_control import Control, control, project

#: How often the control processes here look at a trigger's folder (the default is 2 s).
POLL_SECONDS = 0.2
POLLING = {"INFERD_TRIGGER_POLL_SECONDS": str(POLL_SECONDS)}
#: How long a test waits to see that something does not happen: this many looks at the folder.
LOOKS = 10


def runs_of(running: Control, trigger: str) -> list[dict[str, Any]]:
    found = running.call("GET", "/deployments/app/runs").json()
    return [run for run in found if run["trigger_id"] == trigger]


def wait_runs(running: Control, trigger: str, count: int, timeout: float = 90) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = runs_of(running, trigger)
        if len(found) >= count and all(run["state"] == "succeeded" for run in found):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.3)


def drop(folder: Path, name: str, value: float) -> None:
    scratch = folder.parent / f".{name}"
    scratch.write_text(json.dumps({"x": [value]}))
    scratch.rename(folder / name)


def test_trigger_runs_each_new_file_once_across_restarts(tmp_path: Path) -> None:
    data, watched, output = tmp_path / "data", tmp_path / "watched", tmp_path / "out"
    watched.mkdir()
    drop(watched, "old.json", 9.0)  # there before the trigger: not run
    with control(data, env=POLLING) as running:
        running.call("POST", "/deployments", json={"name": "app"})
        version = push(running, project(tmp_path / "p", 3.0), "1")
        sleepy = push(running, slow(tmp_path / "slow"), "slow")
        created = running.verb(
            "create-trigger", "app", version, "--input", str(watched), "--output", str(output), "--json"
        )
        assert created.returncode == 0, created.stderr
        trigger = json.loads(created.stdout)["id"]
        listed = json.loads(running.verb("triggers", "app", "--json").stdout)
        assert [found["id"] for found in listed] == [trigger]

        drop(watched, "a.json", 1.0)
        drop(watched, "b.json", 2.0)
        found = wait_runs(running, trigger, 2)
        assert sorted(run["inputs"][0] for run in found) == [str(watched / "a.json"), str(watched / "b.json")]
        assert json.loads((output / "a.json").read_text())["outputs"][0]["data"] == [3.0]
        assert json.loads((output / "b.json").read_text())["outputs"][0]["data"] == [6.0]
        assert not (output / "old.json").exists()

        body = {"version": sleepy, "inputs": [str(watched / "a.json")], "output": str(tmp_path / "slow-out")}
        left = running.call("POST", "/deployments/app/runs", json=body).json()["id"]
        wait_run(running, left, ("running",))
        pid_file = data / "platform" / "runs" / f"{left}.pid"
        while not pid_file.exists():
            time.sleep(0.1)
        pid = int(pid_file.read_text().split(":")[0])
        running.process.kill()  # no goodbye: the run's server is left behind
        running.process.wait(30)
        assert alive(pid)

    with control(data, env=POLLING) as again:
        failed = again.call("GET", f"/runs/{left}").json()
        assert failed["state"] == "failed" and failed["reason"] == "control process restarted"
        assert not alive(pid) and not pid_file.exists()
        time.sleep(LOOKS * POLL_SECONDS)  # looks at the folder: nothing is run twice
        assert len(runs_of(again, trigger)) == 2
        drop(watched, "c.json", 3.0)
        assert len(wait_runs(again, trigger, 3)) == 3
        assert json.loads((output / "c.json").read_text())["outputs"][0]["data"] == [9.0]

        disabled = again.call("PATCH", f"/triggers/{trigger}", json={"enabled": False})
        assert disabled.status_code == 200 and disabled.json()["enabled"] is False
        drop(watched, "d.json", 4.0)
        time.sleep(LOOKS * POLL_SECONDS)  # looks at the folder: no run
        assert len(runs_of(again, trigger)) == 3
        assert again.verb("delete-trigger", trigger).returncode == 0
        assert again.call("GET", f"/triggers/{trigger}").status_code == 404
        assert again.call("GET", "/deployments/app/triggers").json() == []
        assert len([run for run in again.call("GET", "/deployments/app/runs").json()]) == 4
