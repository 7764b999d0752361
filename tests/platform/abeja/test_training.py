"""``abeja training ...`` from the published abejacli 2.2.8 against a control process: a job
definition, versions uploaded from a project folder (described, updated, archived), jobs run from
them (their environment and scoped token, result downloaded, a failing handler, stop-job, the time
limit, Pending past the limit of jobs at once, archive, paging), statistics reported from inside a job
by ABEJA's SDK 2.3.6 (its own venv, picked by the version's image), bad archives and unknown ids; and
a control process restarted with a job running."""

from __future__ import annotations

import io
import json
import tarfile
import textwrap
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx

from inferd.core.processes import rss_bytes
from tests.platform.abeja.conftest import TOKEN, Control, control
from tests.platform.abeja.test_cli import COLOURS, Abeja

ORG = "/organizations/2345678901234"
SDK_IMAGE = "abeja-inc/all-cpu:sdk-test"

TRAIN = textwrap.dedent("""
    import json
    import os
    import time
    from pathlib import Path


    def handler(context):
        mode = os.environ.get("MODE", "ok")
        print("training", os.environ["TRAINING_JOB_ID"], mode, flush=True)
        if mode == "raise":
            raise ValueError("bad learning rate")
        if mode == "sleep":
            time.sleep(120)
        if mode == "stats":
            from abeja.train import Client
            from abeja.train.statistics import Statistics

            client = Client()
            for epoch in (1, 2):
                statistics = Statistics(num_epochs=2, epoch=epoch)
                statistics.add_stage(name=Statistics.STAGE_TRAIN, accuracy=0.4 * epoch, loss=1.0 / epoch)
                client.update_statistics(statistics)
        result = Path(os.environ["ABEJA_TRAINING_RESULT_DIR"])
        seen = {"environment": dict(os.environ), "datasets": context.datasets}
        (result / "model.json").write_text(json.dumps(seen))
        # abejacli's download progress fails on a file under one 8 KiB block (it divides a str)
        (result / "weights.bin").write_bytes(os.urandom(32 * 1024))
""")


def _job(abeja: Abeja, job_id: str) -> dict[str, Any]:
    entries = _training(abeja, "describe-jobs", "-j", "trainer", "--include-archived", "-l", "100")["entries"]
    return next(e for e in entries if e["training_job_id"] == job_id)


def _wait(abeja: Abeja, job_id: str, statuses: tuple[str, ...], seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (job := _job(abeja, job_id))["status"] not in statuses:
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


def _create_job(abeja: Abeja, version: str, *args: str) -> str:
    created = _training(abeja, "create-job", "-j", "trainer", "-v", version, *args)
    assert created["status"] in ("Pending", "Active"), created
    return str(created["training_job_id"])


def test_abeja_training_commands(abeja_cli: Path, abeja_sdk: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    home = tmp_path / "home"
    home.mkdir()
    settings = {
        "INFERD_ABEJA_TRAINING_MAX_JOBS": "1",
        "INFERD_ABEJA_TRAINING_TIMEOUT": "10",
        "INFERD_ABEJA_TRAINING_PYTHONS": json.dumps({SDK_IMAGE: str(abeja_sdk)}),
    }
    with control(tmp_path / "data", **settings) as running, Abeja(abeja_cli, running, home) as abeja:
        train = abeja.run("init", "trainer", cwd=project, group="training")
        assert "training initialized" in train.stdout and (project / "training.yaml").is_file()
        definition = _training(abeja, "create-job-definition", cwd=project)
        definition_id = definition["job_definition_id"]
        assert definition["name"] == "trainer" and len(definition_id) == 13 and definition["versions"] == []
        listed = _training(abeja, "describe-job-definitions")["entries"]
        assert [d["name"] for d in listed] == ["trainer"]

        # versions: the folder's tar.gz with handler, image, environment, datasets
        first = _training(
            abeja,
            *("create-version", "-h", "train:handler", "-i", "abeja-inc/all-cpu:19.10"),
            *("-e", "RATE:0.1", "--dataset", "train:1111111111111", "-d", "first try"),
            cwd=project,
        )
        assert first["job_definition_version"] == 1 and first["environment"] == {"RATE": "0.1"}
        assert first["datasets"] == {"train": "1111111111111"} and first["handler"] == "train:handler"
        second = _training(abeja, "create-version", "-h", "train:handler", "-i", SDK_IMAGE, cwd=project)
        assert second["job_definition_version"] == 2
        versions = _training(abeja, "describe-versions", cwd=project)["entries"]
        assert [v["job_definition_version"] for v in versions] == [1, 2]
        updated = _training(abeja, "update-version", "-v", "1", "-d", "the baseline", cwd=project)
        assert updated["description"] == "the baseline"
        _training(abeja, "archive-version", "-v", "1", cwd=project)
        assert [
            v["job_definition_version"] for v in _training(abeja, "describe-versions", cwd=project)["entries"]
        ] == [2]
        every = _training(abeja, "describe-versions", "--include-archived", cwd=project)["entries"]
        assert [v["archived"] for v in every] == [True, False]
        _training(abeja, "unarchive-version", "-v", "1", cwd=project)
        from_git = abeja.run(
            "create-version-from-git",
            "--git-url",
            "https://example.invalid/x.git",
            "-h",
            "train:handler",
            "-i",
            "abeja-inc/all-cpu:19.10",
            cwd=project,
            ok=False,
            group="training",
        )
        assert from_git.returncode != 0
        git = running.call("POST", f"{ORG}/training/definitions/trainer/git/versions", json={})
        assert git.status_code == 501 and git.json()["error"] == "not_implemented"

        # a job: its environment, its own token, its result
        rss_before = rss_bytes(running.process.pid) or 0
        job_id = _create_job(
            abeja,
            "1",
            "-e",
            "MODE:ok",
            "--instance-type",
            "cpu-1",
            "-d",
            "run one",
            "--export-log",
            "--dataset",
            "extra:2222222222222",
        )
        done = _wait(abeja, job_id, ("Complete", "Failed"))
        assert done["status"] == "Complete", done
        assert done["start_time"] and done["completion_time"] and done["instance_type"] == "cpu-1"
        assert done["description"] == "run one" and done["export_log"] is True
        downloaded = abeja.run(
            "download-training-result", "-jd", definition_id, "-j", job_id, cwd=tmp_path, group="training"
        )
        assert "Downloaded a file" in downloaded.stdout
        with zipfile.ZipFile(tmp_path / f"{definition_id}_{job_id}_result.zip") as result:
            model = json.loads(result.read("model.json"))
        environment = model["environment"]
        assert environment["TRAINING_JOB_DEFINITION_NAME"] == "trainer"
        assert environment["TRAINING_JOB_ID"] == job_id
        assert environment["ABEJA_ORGANIZATION_ID"] == "2345678901234"
        assert environment["ABEJA_API_URL"] == f"http://localhost:{running.port}"
        assert environment["RATE"] == "0.1" and environment["MODE"] == "ok"
        assert Path(environment["ABEJA_STORAGE_DIR_PATH"]).is_dir()
        assert model["datasets"] == {"train": "1111111111111", "extra": "2222222222222"}
        assert TOKEN not in json.dumps(environment)  # never the control process's token
        job_token = environment["PLATFORM_AUTH_TOKEN"]
        own = f"{ORG}/training/definitions/trainer/jobs/{job_id}"
        assert running.call("GET", own, token=job_token).status_code == 200
        for method, path in (
            ("GET", f"{ORG}/deployments"),
            ("POST", f"{own}/stop"),
            ("GET", "/platform/v1/deployments"),
        ):
            assert running.call(method, path, token=job_token).status_code == 401, path
        assert not list((running.data / "platform" / "abeja-training" / "jobs").glob(f"{job_id}*"))

        # a handler that raises: Failed with its reason, the log kept
        failing = _create_job(abeja, "1", "-e", "MODE:raise")
        failed = _wait(abeja, failing, ("Complete", "Failed"))
        assert failed["status"] == "Failed" and "ValueError: bad learning rate" in failed["status_message"]
        log = running.call("GET", f"{ORG}/training/definitions/trainer/jobs/{failing}/logs").json()
        assert any("bad learning rate" in e["message"] for e in log["events"])
        result = running.call("GET", f"{ORG}/training/definitions/trainer/jobs/{failing}/result")
        assert result.status_code == 404 and result.json()["error"] == "not_found"

        # one job at a time: the next waits Pending; stop-job ends the running one within 10 s
        sleeping = _create_job(abeja, "1", "-e", "MODE:sleep")
        _wait(abeja, sleeping, ("Active",))
        waiting = _create_job(abeja, "1", "-e", "MODE:ok")
        assert _job(abeja, waiting)["status"] == "Pending"
        asked = time.monotonic()
        stopped = _training(abeja, "stop-job", "-j", "trainer", "--job-id", sleeping)
        assert time.monotonic() - asked < 10 and stopped["status"] == "Stopped"
        assert _job(abeja, sleeping)["status"] == "Stopped"
        assert _wait(abeja, waiting, ("Complete", "Failed"))["status"] == "Complete"

        # the time limit (INFERD_ABEJA_TRAINING_TIMEOUT=10): Failed
        slow = _create_job(abeja, "1", "-e", "MODE:sleep")
        timed_out = _wait(abeja, slow, ("Complete", "Failed", "Stopped"), seconds=30)
        assert timed_out["status"] == "Failed" and "timed out after 10 s" in timed_out["status_message"]

        # statistics from inside the job, through ABEJA's SDK in its own venv (the version's image)
        counted = _create_job(abeja, "2", "-e", "MODE:stats")
        reported = _wait(abeja, counted, ("Complete", "Failed"), seconds=60)
        assert reported["status"] == "Complete", running.call(
            "GET", f"{own[: -len(job_id)]}{counted}/logs"
        ).text
        assert reported["statistics"]["epoch"] == 2
        assert reported["statistics"]["stages"]["train"] == {"accuracy": 0.8, "loss": 0.5}
        history = running.call("GET", f"{ORG}/training/definitions/trainer/jobs/{counted}/statistics").json()
        assert [h["statistics"]["epoch"] for h in history["history"]] == [1, 2]

        # archive, paging, the archived filter
        abeja.run("archive-job", "-j", "trainer", "--job-id", failing, group="training")
        shown = _training(abeja, "describe-jobs", "-j", "trainer", "-l", "100")
        assert failing not in [e["training_job_id"] for e in shown["entries"]] and shown["total"] == 5
        page = _training(abeja, "describe-jobs", "-j", "trainer", "--include-archived", "-l", "2", "-o", "1")
        assert len(page["entries"]) == 2 and page["total"] == 6 and page["offset"] == 1
        abeja.run("unarchive-job", "-j", "trainer", "--job-id", failing, group="training")
        _training(abeja, "describe-job-definitions")
        assert running.call("POST", f"{ORG}/training/definitions/trainer/archive").status_code == 200
        assert _training(abeja, "describe-job-definitions")["entries"] == []
        assert running.call("POST", f"{ORG}/training/definitions/trainer/unarchive").status_code == 200

        # unknown ids: ABEJA's error body with 404
        for path in (
            f"{ORG}/training/definitions/nope",
            f"{ORG}/training/definitions/trainer/versions/9",
            f"{ORG}/training/definitions/trainer/jobs/1234567890123",
        ):
            answer = running.call("GET", path)
            assert answer.status_code == 404 and answer.json()["error"] == "not_found", path
        missing = abeja.run("create-job", "-j", "nope", "-v", "1", ok=False, group="training")
        assert missing.returncode != 0

        # bad archives go through the model versions' checks: 400 naming the member, nothing kept
        _bad_archives(running)
        assert (rss_bytes(running.process.pid) or 0) - rss_before < 50 * 1024 * 1024


def _training(abeja: Abeja, *args: str, cwd: Path | None = None) -> Any:
    return json.loads(COLOURS.sub("", abeja.run(*args, cwd=cwd, group="training").stdout))


def _bad_archives(running: Control) -> None:
    url = f"{ORG}/training/definitions/trainer/versions"
    artifacts = running.data / "platform" / "abeja-training" / "artifacts"
    before = sorted(p.name for p in artifacts.rglob("*"))
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        member = tarfile.TarInfo("../escape.py")
        member.size = 2
        tar.addfile(member, io.BytesIO(b"x\n"))
    files = {
        "source_code": ("archive.tar.gz", evil.getvalue(), "application/tar+gzip"),
        "parameters": ("params.json", b'{"handler": "train:handler"}', "application/json"),
    }
    answer = running.call("POST", url, files=files)
    assert answer.status_code == 400 and "escape.py" in answer.json()["error_description"], answer.text
    bad_handler = {**files, "source_code": ("a.tar.gz", b"", "application/gzip")}
    bad_handler["parameters"] = ("params.json", b'{"handler": "rm -rf"}', "application/json")
    answer = running.call("POST", url, files=bad_handler)
    assert answer.status_code == 400 and "handler" in answer.json()["error_description"]
    answer = running.call("POST", url, content=b"{}", headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert sorted(p.name for p in artifacts.rglob("*")) == before
    assert httpx.get(running.api + url, timeout=10).status_code == 401


def test_restart_fails_jobs_whose_process_is_gone(abeja_cli: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data"
    with control(data) as running, Abeja(abeja_cli, running, home) as abeja:
        abeja.run("create-job-definition", "-n", "trainer", group="training")
        _training(abeja, "create-version", "-j", "trainer", "-h", "train:handler", "-i", "x:1", cwd=project)
        finished = _create_job(abeja, "1", "-e", "MODE:ok")
        _wait(abeja, finished, ("Complete",))
        left = _create_job(abeja, "1", "-e", "MODE:sleep")
        _wait(abeja, left, ("Active",))
        pid_file = data / "platform" / "abeja-training" / "jobs" / f"{left}.pid"
        deadline = time.monotonic() + 10
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        pid = int(pid_file.read_text().split(":")[0])
    with control(data) as running, Abeja(abeja_cli, running, home) as abeja:
        assert _job(abeja, finished)["status"] == "Complete"
        failed = _job(abeja, left)
        assert failed["status"] == "Failed" and failed["status_message"] == "control process restarted"
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


PREDICT = textwrap.dedent("""
    import json
    import os
    from pathlib import Path

    TRAINED = json.loads((Path(os.environ["ABEJA_TRAINING_RESULT_DIR"]) / "model.json").read_text())


    def handler(request, context):
        return {
            "status_code": 200,
            "content_type": "application/json",
            "content": {"trained_by": TRAINED["environment"]["TRAINING_JOB_ID"]},
        }
""")


def test_training_models_served_with_m(abeja_cli: Path, tmp_path: Path) -> None:
    """A job's result made a training model (create-, describe-, update-, download-, archive-,
    unarchive-training-model), then given to a service and a run with ``-m``: their handler reads
    it from ABEJA_TRAINING_RESULT_DIR when imported."""
    project, predictor, home = tmp_path / "project", tmp_path / "predictor", tmp_path / "home"
    for folder in (project, predictor, home):
        folder.mkdir()
    (project / "train.py").write_text(TRAIN)
    (predictor / "main.py").write_text(PREDICT)
    with control(tmp_path / "data") as running, Abeja(abeja_cli, running, home) as abeja:
        definition_id = _training(abeja, "create-job-definition", "-n", "trainer")["job_definition_id"]
        _training(abeja, "create-version", "-j", "trainer", "-h", "train:handler", "-i", "x:1", cwd=project)
        job_id = _create_job(abeja, "1", "-e", "MODE:ok")
        assert _wait(abeja, job_id, ("Complete", "Failed"))["status"] == "Complete"
        abeja.run(
            "download-training-result", "-jd", definition_id, "-j", job_id, cwd=tmp_path, group="training"
        )
        result = tmp_path / f"{definition_id}_{job_id}_result.zip"

        model = _training(
            abeja, "create-training-model", "-j", "trainer", "-f", str(result), "-d", "baseline"
        )
        model_id = model["training_model_id"]
        assert model["description"] == "baseline" and model["job_definition_id"] == definition_id
        listed = _training(abeja, "describe-training-models", "-j", "trainer")["entries"]
        assert [m["training_model_id"] for m in listed] == [model_id]
        changed = _training(abeja, "update-training-model", "-j", "trainer", "-m", model_id, "-d", "better")
        assert changed["description"] == "better"
        uri = _training(abeja, "download-training-model", "-j", "trainer", "-m", model_id)["download_uri"]
        assert httpx.get(uri, timeout=30).content == result.read_bytes()  # presigned: no credentials
        _training(abeja, "archive-training-model", "-j", "trainer", "-m", model_id)
        assert _training(abeja, "describe-training-models", "-j", "trainer")["entries"] == []
        _training(abeja, "unarchive-training-model", "-j", "trainer", "-m", model_id)
        _bad_model(running)

        dep = _model(abeja, "create-deployment", "-n", "predictor")["deployment_id"]
        ver = _model(
            abeja,
            "create-deployment-version",
            "-d",
            dep,
            "-v",
            "0.0.1",
            "-i",
            "x:1",
            "-h",
            "main:handler",
            cwd=predictor,
        )["version_id"]
        svc = _model(abeja, "create-service", "-d", dep, "-v", ver, "-m", model_id)["service_id"]
        deadline = time.monotonic() + 60
        while (status := _model(abeja, "describe-services", "-d", dep, "-s", svc)["status"]) != "READY":
            assert status == "IN_PROGRESS" and time.monotonic() < deadline, status
            time.sleep(0.3)
        answer = running.call("POST", f"/deployments/{dep}/services/{svc}", json={})
        assert answer.status_code == 200 and answer.json() == {"trained_by": job_id}, answer.text

        channel = running.data / "platform" / "datalake" / "1230000000000"
        channel.mkdir(parents=True)
        (channel / "in.json").write_text("{}")
        run = _model(
            abeja,
            "submit-run",
            "-d",
            dep,
            "-v",
            ver,
            "-m",
            model_id,
            "--input_operator",
            "$datalake:1",
            "--input_target",
            "1230000000000/in.json",
            "--output_operator",
            "$datalake:1",
            "--output_target",
            "1240000000000",
        )
        deadline = time.monotonic() + 60
        while (
            state := _model(abeja, "describe-runs", "-d", dep, "-r", run["run_id"])["status"]
        ) != "SUCCEEDED":
            assert state in ("PENDING", "RUNNING") and time.monotonic() < deadline, state
            time.sleep(0.3)
        written = running.data / "platform" / "datalake" / "1240000000000" / "in.json"
        assert json.loads(written.read_text()) == {"trained_by": job_id}

        unknown = running.call(
            "POST", f"{ORG}/deployments/{dep}/services", json={"version_id": ver, "models": {"alias": "1"}}
        )
        assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
        _model(abeja, "delete-service", "-d", dep, "-s", svc)

        # a definition without unfinished jobs is deleted with its versions, jobs and models
        training = running.data / "platform" / "abeja-training"
        assert running.call("DELETE", f"{ORG}/training/definitions/trainer").status_code == 200
        assert running.call("GET", f"{ORG}/training/definitions/trainer").status_code == 404
        assert not list((training / "artifacts" / "sha256").iterdir())
        assert not list((training / "models").iterdir()) and not list((training / "results").iterdir())
        assert not list((training / "logs").iterdir())


def _model(abeja: Abeja, *args: str, cwd: Path | None = None) -> Any:
    return json.loads(COLOURS.sub("", abeja.run(*args, cwd=cwd).stdout))


def _bad_model(running: Control) -> None:
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../../escape.txt", "x")
    files = {
        "model_data": ("model.zip", evil.getvalue(), "application/zip"),
        "parameters": ("params.json", b"{}", "application/json"),
    }
    answer = running.call("POST", f"{ORG}/training/definitions/trainer/models", files=files)
    assert answer.status_code == 400 and "escape.txt" in answer.json()["error_description"], answer.text
    files["parameters"] = ("params.json", b'{"training_job_id": "1234567890123"}', "application/json")
    answer = running.call("POST", f"{ORG}/training/definitions/trainer/models", files=files)
    assert answer.status_code == 404
    assert not list((running.data / "platform" / "abeja-training").rglob("escape.txt"))


def test_jobs_count_in_the_process_budget(tmp_path: Path) -> None:
    """A job is one process of INFERD_MAX_PROCESSES: one past it is refused (409, naming the
    setting) and nothing is recorded; the running one is counted until it is stopped."""
    source = io.BytesIO()
    with tarfile.open(fileobj=source, mode="w:gz") as tar:
        body = b"import time\n\ndef handler(context):\n    time.sleep(60)\n"
        member = tarfile.TarInfo("train.py")
        member.size = len(body)
        tar.addfile(member, io.BytesIO(body))
    with control(tmp_path / "data", INFERD_MAX_PROCESSES="1") as running:
        base = f"{ORG}/training/definitions"
        assert running.call("POST", base, json={"name": "budget"}).status_code == 200
        files = {
            "source_code": ("archive.tar.gz", source.getvalue(), "application/tar+gzip"),
            "parameters": ("params.json", b"{}", "application/json"),
        }
        assert running.call("POST", f"{base}/budget/versions", files=files).status_code == 200
        first = running.call("POST", f"{base}/budget/versions/1/jobs", json={})
        assert first.status_code == 200, first.text
        refused = running.call("POST", f"{base}/budget/versions/1/jobs", json={})
        assert refused.status_code == 409 and "INFERD_MAX_PROCESSES" in refused.json()["error_description"]
        assert running.call("GET", f"{base}/budget/jobs").json()["total"] == 1
        job = first.json()["training_job_id"]
        assert running.call("POST", f"{base}/budget/jobs/{job}/stop").json()["status"] == "Stopped"
        assert running.call("POST", f"{base}/budget/versions/1/jobs", json={}).status_code == 200
        bad = running.call("POST", f"{base}/budget/versions/1/jobs", json={"environment": {"1X": "y"}})
        assert bad.status_code == 400 and "1X" in bad.json()["error_description"]
        assert running.call("POST", f"{base}/budget/versions/x/jobs", json={}).status_code == 400
