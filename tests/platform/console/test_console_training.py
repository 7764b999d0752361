"""The console's training section in a real headless Chromium, over a real control process: a job
definition whose version runs under ABEJA's SDK 2.3.6 (its own venv, picked by the version's image),
one job reporting loss and accuracy for five epochs through ``abeja.train.Client().update_statistics``
and completing, one failing after two epochs, and a training model made from the first's result. The
page lists the definition, its version, both jobs with their status, times, last statistics and
curves (an SVG line per stage with a point per epoch), and the model; a hostile description is text.
The read-only JSON it reads is the control API's: refused without credentials and to a job's own
token. A screenshot is kept under ``test-artifacts/``."""

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

from tests import browser
from tests.platform.abeja.conftest import abeja_sdk  # noqa: F401 (the fixture)
from tests.platform.control import Control, control

ORG = "/organizations/2345678901234"
IMAGE = "abeja-inc/all-cpu:console-test"
XSS = '<img src=x onerror="window.hacked=1"> & "quotes"'

TRAIN = textwrap.dedent("""
    import os
    import urllib.error
    import urllib.request
    from pathlib import Path

    from abeja.train import Client
    from abeja.train.statistics import Statistics


    def handler(context):
        # the console's JSON is the control API's: a job's own token reads none of it
        base = os.environ["ABEJA_API_URL"].split("/organizations/")[0]
        asked = urllib.request.Request(
            base + "/platform/v1/training",
            headers={"Authorization": "Bearer " + os.environ["PLATFORM_AUTH_TOKEN"]},
        )
        try:
            urllib.request.urlopen(asked, timeout=10)
            print("console read: 200", flush=True)
        except urllib.error.HTTPError as error:
            print("console read:", error.code, flush=True)
        client = Client()
        epochs = int(os.environ["EPOCHS"])
        for epoch in range(1, epochs + 1):
            statistics = Statistics(num_epochs=epochs, epoch=epoch)
            train, validation = Statistics.STAGE_TRAIN, Statistics.STAGE_VALIDATION
            statistics.add_stage(name=train, accuracy=1 - 0.5 / epoch, loss=1.0 / epoch)
            statistics.add_stage(name=validation, accuracy=0.9 - 0.5 / epoch, loss=1.3 / epoch)
            client.update_statistics(statistics)
        if os.environ.get("MODE") == "fail":
            raise ValueError("the loss diverged")
        (Path(os.environ["ABEJA_TRAINING_RESULT_DIR"]) / "weights.txt").write_text("0.5")
""")


def _abeja(running: Control, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, running.base + ORG + path, headers=running.headers, timeout=60, **kwargs)


def _wait(running: Control, job: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (found := _abeja(running, "GET", f"/training/definitions/trainer/jobs/{job}").json())[
        "status"
    ] not in (
        "Complete",
        "Failed",
        "Stopped",
    ):
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    return found


def test_the_console_shows_definitions_jobs_curves_and_models(
    abeja_sdk: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(project, arcname=".")
    env = {"INFERD_ABEJA_TRAINING_PYTHONS": json.dumps({IMAGE: str(abeja_sdk)})}
    with control(tmp_path / "data", env=env) as running:
        assert running.token
        assert _abeja(running, "POST", "/training/definitions", json={"name": "trainer"}).status_code == 200
        parameters = {"handler": "train:handler", "image": IMAGE, "description": "five epochs"}
        files = {
            "source_code": ("project.tar.gz", archive.getvalue(), "application/gzip"),
            "parameters": (None, json.dumps(parameters)),
        }
        version = _abeja(running, "POST", "/training/definitions/trainer/versions", files=files)
        assert version.status_code == 200, version.text
        jobs = []
        for environment, description in (({"EPOCHS": "5"}, XSS), ({"EPOCHS": "2", "MODE": "fail"}, "fails")):
            body = {"environment": environment, "description": description}
            created = _abeja(running, "POST", "/training/definitions/trainer/versions/1/jobs", json=body)
            assert created.status_code == 200, created.text
            jobs.append(created.json()["training_job_id"])
        good, bad = jobs
        assert _wait(running, good)["status"] == "Complete"
        failed = _wait(running, bad)
        assert failed["status"] == "Failed" and "the loss diverged" in failed["status_message"]
        logs = _abeja(running, "GET", f"/training/definitions/trainer/jobs/{good}/logs").json()["events"]
        assert any("console read: 401" in event["message"] for event in logs), logs

        result = httpx.get(
            _abeja(running, "GET", f"/training/definitions/trainer/jobs/{good}/result").json()["artifacts"][
                "complete"
            ]["uri"],
            timeout=30,
        )
        assert zipfile.ZipFile(io.BytesIO(result.content)).read("weights.txt") == b"0.5"
        model_files = {
            "model_data": ("result.zip", result.content, "application/zip"),
            "parameters": (None, json.dumps({"training_job_id": good, "description": "baseline"})),
        }
        model = _abeja(running, "POST", "/training/definitions/trainer/models", files=model_files)
        assert model.status_code == 200, model.text
        model_id = model.json()["training_model_id"]

        # the JSON the page reads: the control API's, behind its token
        assert httpx.get(running.api + "/training", timeout=30).status_code == 401
        overview = running.call("GET", "/training").json()
        [definition] = overview["definitions"]
        assert definition["name"] == "trainer" and [j["id"] for j in definition["jobs"]] == [bad, good]
        assert definition["jobs"][1]["statistics"]["stages"]["train"]["loss"] == 0.2
        history = running.call("GET", f"/training/jobs/{good}/statistics").json()["history"]
        assert [entry["statistics"]["epoch"] for entry in history] == [1, 2, 3, 4, 5]
        assert running.call("GET", "/training/jobs/1/statistics").status_code == 404
        assert "/platform/v1/training" in running.call("GET", "/openapi.json").json()["paths"]

        with browser.page(size=(1400, 1000)) as tab:
            _sign_in(tab, running)
            good_row, bad_row = f"tr[data-job='{good}']", f"tr[data-job='{bad}']"
            tab.wait_for(f'!!document.querySelector("{good_row} svg.chart path.line")', timeout=30)
            assert not tab.evaluate("document.querySelector('#training-section').hidden")
            assert tab.text("section[data-definition=trainer] h2").startswith("trainer")
            assert "five epochs" in tab.text("section[data-definition=trainer] table.versions")
            assert (
                tab.evaluate(f'document.querySelector("{good_row} [data-status]").dataset.status')
                == "Complete"
            )
            assert (
                tab.evaluate(f'document.querySelector("{bad_row} [data-status]").dataset.status') == "Failed"
            )
            assert "the loss diverged" in tab.text(f"{bad_row} .reason")
            last = tab.text(f"{good_row} td.statistics")
            assert "epoch 5/5" in last and "train loss 0.20" in last and "validation" in last, last
            # the curves: loss and accuracy, a line per stage, a point per epoch reported
            drawn = tab.evaluate(
                f'[...document.querySelectorAll("{good_row} svg.chart path.line")]'
                ".map((p) => [p.closest('svg').dataset.metric, p.dataset.stage, p.dataset.points])"
            )
            assert sorted(drawn) == sorted(
                [[m, s, "5"] for m in ("loss", "accuracy") for s in ("train", "validation")]
            )
            assert (
                tab.evaluate(
                    f"document.querySelectorAll(\"{bad_row} svg.chart path.line[data-points='2']\").length"
                )
                == 4
            )
            # loss falls: the train line's last point is lower on the chart (a larger y) than its first
            line = f"{good_row} svg[data-metric=loss] path[data-stage=train]"
            path = tab.evaluate(f"document.querySelector(\"{line}\").getAttribute('d')")
            ys = [float(point.split(",")[1]) for point in path.replace("M", "").split(" L")]
            assert len(ys) == 5 and ys == sorted(ys), path
            models = tab.text("section[data-definition=trainer] table.models")
            assert model_id in models and good in models and "baseline" in models
            # a description with markup is text: shown as written, nothing of it ran
            assert tab.text(f"{good_row} .description") == XSS
            assert tab.evaluate("document.querySelectorAll('#training img').length") == 0
            assert tab.evaluate("window.hacked === undefined")
            tab.evaluate("document.querySelector('#training-section').scrollIntoView()")
            tab.screenshot("console-training.png")


def _sign_in(tab: browser.Page, running: Control) -> None:
    assert running.token
    tab.send("Page.navigate", url=running.base + "/console/")
    tab.wait_for("!!document.querySelector('input[name=token]')")
    tab.fill("input[name=token]", running.token)
    tab.click("button[type=submit]")
    tab.wait_for("location.pathname === '/console/' && document.readyState === 'complete'")
