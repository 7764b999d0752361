"""Spare launchers of training jobs (`inferd.platform.abeja.training_spares`) against a real control
process: after a first job, the next one runs in the spare started for it, as a fresh process would
have run it (its own folder, environment, log, id, failure reason; stop-job ends it); a job setting
a ``PYTHON*`` variable gets a fresh process; and no spare outlives its control process."""

from __future__ import annotations

import io
import json
import os
import tarfile
import textwrap
import time
from pathlib import Path
from typing import Any

from tests.platform.abeja.conftest import Control, control

ORG = "/organizations/2345678901234"
D = f"{ORG}/training/definitions/spares"

TRAIN = textwrap.dedent("""
    import json
    import os
    import sys
    import time


    def handler(context):
        print("RAN", json.dumps({
            "argv": sys.argv[1:],
            "cwd": os.getcwd(),
            "job": os.environ["TRAINING_JOB_ID"],
            "mode": os.environ.get("MODE"),
            "inferd": sorted(k for k in os.environ if k.startswith("INFERD_") and "FAILURE" not in k),
            "stdin": sys.stdin.read(),
        }), flush=True)
        if os.environ.get("MODE") == "raise":
            raise ValueError("no convergence")
        if os.environ.get("MODE") == "sleep":
            time.sleep(120)
""")


def _job(running: Control, **environment: str) -> str:
    created = running.call("POST", f"{D}/versions/1/jobs", json={"environment": environment})
    assert created.status_code == 200, created.text
    return str(created.json()["training_job_id"])


def _wait(running: Control, job: str, statuses: tuple[str, ...], seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (found := running.call("GET", f"{D}/jobs/{job}").json())["status"] not in statuses:
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
    return dict(found)


def _ran(running: Control, job: str) -> dict[str, Any]:
    events = running.call("GET", f"{D}/jobs/{job}/logs").json()["events"]
    [line] = [e["message"] for e in events if e["message"].startswith("RAN ")]
    return dict(json.loads(line.removeprefix("RAN ")))


def _spares_in(folder: Path) -> list[int]:
    """Processes whose working folder is ``folder`` (the idle spares of a control process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == str(folder):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_jobs_run_in_spares_as_in_fresh_processes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(project / "train.py", arcname="train.py")
    jobs_folder = tmp_path / "data" / "platform" / "abeja-training" / "jobs"
    with control(tmp_path / "data") as running:
        assert running.call("POST", f"{ORG}/training/definitions", json={"name": "spares"}).status_code == 200
        files = {
            "source_code": ("p.tar.gz", archive.getvalue(), "application/gzip"),
            "parameters": (None, json.dumps({"handler": "train:handler"})),
        }
        assert running.call("POST", f"{D}/versions", files=files).status_code == 200

        first = _job(running, MODE="first")
        assert _wait(running, first, ("Complete", "Failed"))["status"] == "Complete"
        assert _ran(running, first)["argv"] == ["train:handler"]  # no spare before the first job
        deadline = time.monotonic() + 10
        while len(_spares_in(jobs_folder)) != 1:  # the spare for the next job
            assert time.monotonic() < deadline, _spares_in(jobs_folder)
            time.sleep(0.05)

        second = _job(running, MODE="second")
        assert _wait(running, second, ("Complete", "Failed"))["status"] == "Complete"
        ran = _ran(running, second)
        assert ran["argv"] == ["--spare"]  # the spare ran it...
        # ...as a fresh process would have: its folder, its environment alone, nothing on stdin
        assert ran["job"] == second and ran["mode"] == "second" and ran["inferd"] == [] and ran["stdin"] == ""
        assert ran["cwd"] == str(jobs_folder / second / "source")
        assert not (jobs_folder / second).exists()  # its folder removed after, as for any job

        failing = _job(running, MODE="raise")
        failed = _wait(running, failing, ("Complete", "Failed"))
        assert _ran(running, failing)["argv"] == ["--spare"]
        assert failed["status"] == "Failed" and "ValueError: no convergence" in failed["status_message"]

        # a variable read when an interpreter starts: a fresh process, though a spare is idle
        deadline = time.monotonic() + 10
        while len(_spares_in(jobs_folder)) != 1:
            assert time.monotonic() < deadline, _spares_in(jobs_folder)
            time.sleep(0.05)
        fresh = _job(running, MODE="fresh", PYTHONWARNINGS="ignore::DeprecationWarning:spares")
        assert _wait(running, fresh, ("Complete", "Failed"))["status"] == "Complete"
        assert _ran(running, fresh)["argv"] == ["train:handler"]
        deadline = time.monotonic() + 10
        while len(_spares_in(jobs_folder)) != 1:
            assert time.monotonic() < deadline, _spares_in(jobs_folder)
            time.sleep(0.05)

        sleeping = _job(running, MODE="sleep")
        _wait(running, sleeping, ("Active",))
        deadline = time.monotonic() + 10
        while not running.call("GET", f"{D}/jobs/{sleeping}/logs").text.count("RAN "):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _ran(running, sleeping)["argv"] == ["--spare"]
        started = time.monotonic()
        assert running.call("POST", f"{D}/jobs/{sleeping}/stop").status_code == 200
        assert _wait(running, sleeping, ("Stopped",))["status"] == "Stopped"
        assert time.monotonic() - started < 10
        # one more job (fresh: a stopped job leaves no spare made), after which one is idle when the
        # control process stops
        last = _job(running, MODE="last")
        assert _wait(running, last, ("Complete", "Failed"))["status"] == "Complete"
        deadline = time.monotonic() + 10
        while len(_spares_in(jobs_folder)) != 1:
            assert time.monotonic() < deadline, _spares_in(jobs_folder)
            time.sleep(0.05)
    # the control process stopped: no spare of its is left
    deadline = time.monotonic() + 10
    while _spares_in(jobs_folder):
        assert time.monotonic() < deadline, _spares_in(jobs_folder)
        time.sleep(0.05)
