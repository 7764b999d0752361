"""Runs end to end: ``inferd platform serve`` as its own process, versions pushed from project folders,
runs submitted over input files through the API and the ``inferd platform`` verbs, each version run by
a real one-off ``inferd serve`` (or ``inferd run`` for an ABEJA handler)."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

from tests.platform.control import native_project
from tests.platform.test_control import Control, control, project
from tests.storage.conftest import Bucket
from tests.storage.files_server import file_server

FINAL = ("succeeded", "failed", "cancelled")


def push(running: Control, folder: Path, label: str, *options: str) -> str:
    pushed = running.verb("push", "app", str(folder), "--label", label, "--json", *options)
    assert pushed.returncode == 0, pushed.stderr
    return str(json.loads(pushed.stdout)["id"])


def broken(folder: Path) -> Path:
    return native_project(folder, "broken", 'raise RuntimeError("this model is broken")\n')


def slow(folder: Path) -> Path:
    return native_project(
        folder,
        "slow",
        """
            import time
            import inferd

            class Slow(inferd.Model):
                def predict(self, inputs):
                    time.sleep(300)
                    return {"y": inputs["x"]}
        """,
    )


def abeja(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(
        textwrap.dedent("""
            import json

            def handler(request, context):
                body = json.loads(request.read())
                return {"content_type": "application/json", "content": {"doubled": body["x"] * 2}}
        """)
    )
    return folder


def inputs(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number in range(count):
        path = folder / f"in{number}.json"
        path.write_text(json.dumps({"x": [float(number), 1.0]}))
        files.append(path)
    return files


def wait_run(
    running: Control, run: str, states: tuple[str, ...] = FINAL, timeout: float = 90
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found: dict[str, Any] = running.call("GET", f"/runs/{run}").json()
        if found["state"] in states:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def submit(running: Control, version: str, given: list[Path], output: Path | str) -> str:
    body = {"version": version, "inputs": [str(path) for path in given], "output": str(output)}
    created = running.call("POST", "/deployments/app/runs", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["state"] in ("pending", "running")
    return str(created.json()["id"])


def test_runs_of_native_abeja_failing_and_slow_versions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data) as running:
        assert running.verb("create-deployment", "app").returncode == 0
        unnamed = project(tmp_path / "native", 2.0)
        (unnamed / "inferd.yaml").unlink()  # its model is then named after its deployment
        native = push(running, unnamed, "native")
        failing = push(running, broken(tmp_path / "broken"), "broken")
        sleepy = push(running, slow(tmp_path / "slow"), "slow")
        options = ("--dialect", "abeja", "--target", "main:handler")
        handler = push(running, abeja(tmp_path / "abeja"), "abeja", *options)
        given = inputs(tmp_path / "in", 3)

        # side by side: one that fails to load, one that hangs (cancelled), one that works
        bad = submit(running, failing, given, tmp_path / "out-bad")
        hung = submit(running, sleepy, given[:1], tmp_path / "out-slow")
        given_options = [f"--input={path}" for path in given]
        good = running.verb(
            "submit-run", "app", native, *given_options, "--output", str(tmp_path / "out"), "--wait", "--json"
        )
        assert good.returncode == 0, good.stderr + good.stdout
        done = json.loads(good.stdout)
        assert done["state"] == "succeeded" and done["reason"] == "" and done["finished_at"]
        for number in range(3):
            answer = json.loads((tmp_path / "out" / f"in{number}.json").read_text())
            assert answer["outputs"][0]["data"] == [2.0 * number, 2.0] and answer["model_name"] == "app"
        logs = running.verb("run-logs", done["id"]).stdout
        assert all(f"input {path}: HTTP 200, written" in logs for path in given), logs
        assert "inferd ready" in logs  # the server's own output

        failed = wait_run(running, bad)
        assert failed["state"] == "failed" and "this model is broken" in failed["reason"], failed
        assert not list((tmp_path / "out-bad").glob("*"))

        wait_run(running, hung, ("running",))
        pid_file = data / "platform" / "runs" / f"{hung}.pid"
        deadline = time.monotonic() + 60
        while "inferd ready" not in "\n".join(running.call("GET", f"/runs/{hung}/logs").json()["lines"]):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        pid = int(pid_file.read_text().split(":")[0])
        cancelled = running.verb("cancel-run", hung, "--json")
        assert cancelled.returncode == 0, cancelled.stderr
        assert json.loads(cancelled.stdout)["state"] == "cancelled"
        assert not pid_file.exists() and not alive(pid)
        again = running.call("POST", f"/runs/{hung}/cancel")
        assert again.status_code == 409

        folder_options = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out-abeja")]
        ran = running.verb("submit-run", "app", handler, *folder_options, "--wait", "--json")
        assert ran.returncode == 0, ran.stderr + ran.stdout
        assert "run --handler main:handler" in running.verb("run-logs", json.loads(ran.stdout)["id"]).stdout
        for number in range(3):
            answer = json.loads((tmp_path / "out-abeja" / f"in{number}.json").read_text())
            assert answer == {"doubled": [float(number), 1.0, float(number), 1.0]}
        listed = running.verb("runs", "app", "--json")
        states = sorted(run["state"] for run in json.loads(listed.stdout))
        assert states == ["cancelled", "failed", "succeeded", "succeeded"]

        left = submit(running, sleepy, given[:1], tmp_path / "out-left")
        wait_run(running, left, ("running",))
        pid_file = data / "platform" / "runs" / f"{left}.pid"
        while not pid_file.exists():
            time.sleep(0.1)
        pid = int(pid_file.read_text().split(":")[0])
    time.sleep(0.5)
    assert not alive(pid)  # a control process that stops ends its runs' processes


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_bad_runs_get_clear_errors(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        running.call("POST", "/deployments", json={"name": "app"})
        version = push(running, project(tmp_path / "p", 1.0), "1")
        given = inputs(tmp_path / "in", 1)
        (tmp_path / "file").write_text("x")

        def post(deployment: str = "app", **changes: Any) -> tuple[int, str]:
            body = {"version": version, "inputs": [str(given[0])], "output": str(tmp_path / "out"), **changes}
            answer = running.call("POST", f"/deployments/{deployment}/runs", json=body)
            return answer.status_code, answer.json().get("error", "")

        assert post("nope")[0] == 404
        assert post(version="ver-000000000000")[0] == 404
        status, error = post(inputs=[str(given[0]), str(tmp_path / "missing.json")])
        assert status == 400 and "missing.json" in error
        status, error = post(output=str(tmp_path / "file"))
        assert status == 400 and "is a file" in error
        status, error = post(inputs=["relative/in.json"])
        assert status == 400 and "absolute" in error
        assert post(inputs=[str(given[0])] * 1001)[0] == 400
        assert post(inputs=[])[0] == 400
        status, error = post(inputs=["ftp://host/x"])
        assert status == 400 and "ftp" in error
        assert post(parameters={"bad name": "x"})[0] == 400
        assert running.call("GET", "/deployments/app/runs").json() == []
        assert running.call("GET", "/runs/run-000000000000").status_code == 404
        foreign = running.call(
            "POST",
            f"/runs/{'run-000000000000'}/cancel",
            headers={"origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        trigger = running.call(
            "POST",
            "/deployments/app/triggers",
            json={"version": version, "input": str(tmp_path / "nowhere"), "output": str(tmp_path / "out")},
        )
        assert trigger.status_code == 400 and "nowhere" in trigger.json()["error"]
        document = running.call("GET", "/openapi.json").json()
        assert document["paths"]["/platform/v1/deployments/{deployment}/runs"]["post"]
        assert "NewTrigger" in document["components"]["schemas"]


def test_a_run_uploads_its_answers_to_object_storage_or_an_http_location(
    bucket: Bucket, tmp_path: Path
) -> None:
    """To S3 (moto); to an http(s) location each answer PUT at its path + the answer's, with the
    location's query string (a token) that no log line shows; a missing bucket fails the run naming
    the object's URI. The work folder is removed either way."""
    data = tmp_path / "data"
    secret = "token=s3cr3t-t0ken"
    # started after the bucket: AWS_ENDPOINT_URL points at it
    with file_server() as dav, control(data) as running:
        running.call("POST", "/deployments", json={"name": "app"})
        version = push(running, project(tmp_path / "p", 2.0), "1")
        given = inputs(tmp_path / "in", 2)

        done = wait_run(running, submit(running, version, given, f"s3://{bucket.name}/answers"))
        assert done["state"] == "succeeded", done
        assert done["output"] == f"s3://{bucket.name}/answers/"
        listed = bucket.client.list_objects_v2(Bucket=bucket.name, Prefix="answers/")["Contents"]
        assert sorted(item["Key"] for item in listed) == ["answers/in0.json", "answers/in1.json"]
        body = bucket.client.get_object(Bucket=bucket.name, Key="answers/in1.json")["Body"].read()
        assert json.loads(body)["outputs"][0]["data"] == [2.0, 2.0]
        logs = "\n".join(running.call("GET", f"/runs/{done['id']}/logs").json()["lines"])
        assert f"written s3://{bucket.name}/answers/in0.json" in logs
        assert f"uploaded s3://{bucket.name}/answers/in1.json" in logs

        done = wait_run(running, submit(running, version, given, f"{dav.url}/dav/answers?{secret}"))
        assert done["state"] == "succeeded", done
        assert [(path, query) for path, query, _ in sorted(dav.puts)] == [
            ("/dav/answers/in0.json", secret),
            ("/dav/answers/in1.json", secret),
        ]
        assert json.loads(dav.files["/dav/answers/in1.json"].body)["outputs"][0]["data"] == [2.0, 2.0]
        logs = "\n".join(running.call("GET", f"/runs/{done['id']}/logs").json()["lines"])
        assert f"written {dav.url}/dav/answers/in0.json" in logs
        assert f"uploaded {dav.url}/dav/answers/in1.json" in logs
        assert "s3cr3t" not in logs

        missing = f"s3://{bucket.name}-gone/answers/"
        failed = wait_run(running, submit(running, version, given, missing))
        assert failed["state"] == "failed", failed
        assert f"cannot write {missing}in0.json: no such bucket" in failed["reason"]
        assert not [path for path in (data / "platform" / "runs").iterdir() if path.is_dir()]
