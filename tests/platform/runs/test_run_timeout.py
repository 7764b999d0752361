"""Runs have a time limit: a run past its own ``timeout`` (or the control process's
``INFERD_RUN_TIMEOUT``) is stopped, its process's session ended, and it is ``failed`` saying it timed
out, while the control process goes on serving."""

from __future__ import annotations

import time
from pathlib import Path

from tests.platform.conftest import _processes_under
from tests.platform.control import control
from tests.platform.runs.test_runs import inputs, push, slow, wait_run


def test_a_run_past_its_time_limit_is_stopped_and_says_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data, env={"INFERD_RUN_TIMEOUT": "2"}) as running:
        assert running.verb("create-deployment", "app").returncode == 0
        sleepy = push(running, slow(tmp_path / "slow"), "slow")
        given = [str(path) for path in inputs(tmp_path / "in", 1)]
        runs = []
        for timeout in (1.5, None):  # its own limit, then the setting's
            body = {"version": sleepy, "inputs": given, "output": str(tmp_path / "out")}
            if timeout is not None:
                body["timeout"] = timeout
            created = running.call("POST", "/deployments/app/runs", json=body)
            assert created.status_code == 201, created.text
            runs.append(created.json()["id"])
        started = time.monotonic()
        for run, limit in zip(runs, ("1.5", "2"), strict=True):
            done = wait_run(running, run, timeout=30)
            assert done["state"] == "failed", done
            assert done["reason"].startswith(f"timed out after {limit} s"), done
            assert "INFERD_RUN_TIMEOUT" in done["reason"], done
        assert time.monotonic() - started < 20  # the model sleeps 300 s a request
        # its process (a one-off inferd serve, in the run's folder) was ended; nothing of it is left
        assert not _processes_under(data)
        assert not [path for path in (data / "platform" / "runs").iterdir()]
        assert not list((tmp_path / "out").glob("*"))
        logs = running.call("GET", f"/runs/{runs[0]}/logs").json()["lines"]
        assert any("timed out" in line for line in logs), logs
        assert running.call("GET", "/deployments").status_code == 200
