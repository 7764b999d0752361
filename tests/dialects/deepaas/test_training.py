"""Training jobs over real HTTP: start, list, read, cancel, delete, failures, uploads, and records
that survive a restart."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.dialects.deepaas.conftest import site_env
from tests.servers import ROOT, RunningServer, inferd_command, serve

TRAIN = "/v2/models/classy/train/"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$")


def wait_for(client: httpx.Client, uuid: str, status: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = client.get(f"{TRAIN}{uuid}").json()
        if record["status"] == status:
            return record
        time.sleep(0.1)
    raise AssertionError(f"job {uuid} did not reach {status}: {record}")


def test_a_job_runs_to_done(demo: httpx.Client) -> None:
    started = demo.post(TRAIN, params={"epochs": "3"})
    assert started.status_code == 200, started.text
    record = started.json()
    assert list(record) == ["date", "args", "uuid", "status"]
    assert record["status"] == "running" and record["args"] == {"epochs": 3, "fail": False, "seconds": 0.0}
    assert re.fullmatch(r"[0-9a-f]{32}", record["uuid"]) and DATE.match(record["date"])
    done = wait_for(demo, record["uuid"], "done")
    assert done["result"]["output"] == {"epochs": 3, "warmed": 1, "content": None}
    assert DATE.match(done["result"]["finish_date"])
    assert re.fullmatch(r"\d+:\d{2}:\d{2}\.\d{6}", done["result"]["duration"])
    listed = demo.get(TRAIN).json()
    assert isinstance(listed, list) and record["uuid"] in [item["uuid"] for item in listed]


def test_a_failing_job_ends_in_error(demo: httpx.Client) -> None:
    record = demo.post(TRAIN, params={"epochs": "1", "fail": "true"}).json()
    failed = wait_for(demo, record["uuid"], "error")
    assert failed["message"] == "training failed on purpose"
    deleted = demo.delete(f"{TRAIN}{record['uuid']}")
    assert deleted.status_code == 200 and deleted.json()["status"] == "error"
    assert demo.get(f"{TRAIN}{record['uuid']}").status_code == 404


def test_cancel_a_running_job(demo: httpx.Client) -> None:
    record = demo.post(TRAIN, params={"epochs": "1", "seconds": "60"}).json()
    started = time.monotonic()
    cancelled = demo.delete(f"{TRAIN}{record['uuid']}")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert time.monotonic() - started < 10
    assert demo.get(f"{TRAIN}{record['uuid']}").status_code == 404


def test_training_with_an_uploaded_file(demo: httpx.Client) -> None:
    files = {"data": ("train.csv", b"a,b\n1,2\n", "text/csv")}
    record = demo.post(TRAIN, data={"epochs": "2"}, files=files).json()
    assert record["args"]["data"] == ["data", "text/csv", "train.csv"]
    done = wait_for(demo, record["uuid"], "done")
    assert done["result"]["output"]["content"] == "a,b\n1,2\n"


@pytest.mark.parametrize(
    ("path", "status"),
    [(f"{TRAIN}{'0' * 32}", 404), (f"{TRAIN}{'0' * 32}/", 404), (f"{TRAIN}not-a-uuid", 404)],
)
def test_unknown_jobs(demo: httpx.Client, path: str, status: int) -> None:
    assert demo.get(path).status_code == status
    assert demo.delete(path).status_code == status


def test_bad_training_arguments(demo: httpx.Client) -> None:
    response = demo.post(TRAIN)
    assert (response.status_code, response.json()) == (422, {"epochs": ["Missing data for required field."]})
    assert demo.put(TRAIN).headers["allow"] == "GET,POST"


def test_records_survive_a_restart(tmp_path: Path) -> None:
    args = ("--dialect", "deepaas", "--model-name", "classy", "--data-dir", str(tmp_path))
    with serve("", *args, env=site_env()) as server, httpx.Client(base_url=server.http_url) as http:
        done = http.post(TRAIN, params={"epochs": "1"}).json()
        wait_for(http, done["uuid"], "done")
        running = http.post(TRAIN, params={"epochs": "1", "seconds": "60"}).json()
        time.sleep(0.5)
    with serve("", *args, env=site_env()) as server, httpx.Client(base_url=server.http_url) as http:
        assert http.get(f"{TRAIN}{done['uuid']}").json()["status"] == "done"
        interrupted = http.get(f"{TRAIN}{running['uuid']}").json()
        assert interrupted["status"] == "error"
        assert "stopped" in interrupted["message"]


def test_disabled_endpoints_answer_402(tmp_path: Path) -> None:
    args = ("--dialect", "deepaas", "--model-name", "classy", "--data-dir", str(tmp_path))
    with serve("", *args, "--notrain-endpoint", "--nopredict-endpoint", env=site_env()) as server:
        with httpx.Client(base_url=server.http_url) as http:
            for method, path in (("POST", TRAIN), ("GET", TRAIN), ("DELETE", f"{TRAIN}{'0' * 32}")):
                response = http.request(method, path)
                assert (response.status_code, response.text) == (402, "402: Payment Required")
            assert http.post("/v2/models/classy/predict/", params={"number": "1"}).status_code == 402


def test_the_cli_starts_a_job_on_a_running_server_and_follows_it(demo_server: RunningServer) -> None:
    """``inferd train NAME --url URL --follow``: the job's final record on stdout, exit 0 when done."""
    url = demo_server.http_url
    args = ("train", "classy", "--url", url, "--arg", "epochs=2", "--arg", "seconds=0.3", "--follow")
    done = subprocess.run(inferd_command(*args), capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "done" and record["result"]["output"]["epochs"] == 2
    assert httpx.get(f"{url}{TRAIN}{record['uuid']}").json()["status"] == "done"

    failing = ("train", "classy", "--url", url, "--arg", "epochs=1", "--arg", "fail=true", "--follow")
    failed = subprocess.run(inferd_command(*failing), capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["message"] == "training failed on purpose"

    started = subprocess.run(
        inferd_command("train", "classy", "--url", url, "--arg", "epochs=1"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert started.returncode == 0 and json.loads(started.stdout)["status"] == "running"

    refused = subprocess.run(
        inferd_command("train", "classy", "--url", url), capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert refused.returncode == 1 and "epochs" in refused.stderr


def test_a_foreign_page_can_neither_start_nor_cancel_a_job(demo: httpx.Client) -> None:
    """A cross-site form or text/plain POST is sent without a preflight: the Origin check refuses it."""
    foreign = {"Origin": "http://evil.test"}
    before = len(demo.get(TRAIN, headers=foreign).json())  # reading is not refused
    started = demo.post(
        TRAIN, params={"epochs": "1"}, content=b"x", headers={**foreign, "Content-Type": "text/plain"}
    )
    assert started.status_code == 403, started.text
    assert "cross-origin request refused" in started.json()["error"]
    assert len(demo.get(TRAIN).json()) == before
    record = demo.post(TRAIN, params={"epochs": "1", "seconds": "60"}).json()
    refused = demo.delete(f"{TRAIN}{record['uuid']}", headers=foreign)
    assert refused.status_code == 403
    assert demo.get(f"{TRAIN}{record['uuid']}").json()["status"] == "running"
    own = {"Origin": str(demo.base_url).rstrip("/")}
    assert demo.delete(f"{TRAIN}{record['uuid']}", headers=own).json()["status"] == "cancelled"
