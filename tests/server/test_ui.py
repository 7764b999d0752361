"""The try-it page: its JSON description of the models, where it is served, and the forms in a real
headless Chromium (submit, see the prediction; screenshots kept under ``test-artifacts/``)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import Result
from PIL import Image
from typer.testing import CliRunner

from inferd.cli import app
from tests import browser
from tests.dialects.abeja.conftest import RUNTIME
from tests.servers import RunningServer, free_port, serve, served

HERE = Path(__file__).parent / "ui"
DEEPAAS = ("--dialect", "deepaas", "--name", "uploads", "--no-grpc")

scale_server = served(lambda: serve(str(HERE / "scale.py"), "--no-grpc"), scope="module")
deepaas_server = served(
    lambda tmp_path_factory: serve(
        "tests.server.ui.uploads", *DEEPAAS, "--data-dir", str(tmp_path_factory.mktemp("deepaas-ui"))
    ),
    scope="module",
)
abeja_server = served(
    lambda: serve("main:handler", "--dialect", "abeja", "--no-grpc", cwd=RUNTIME), scope="module"
)


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "red.png"
    Image.new("RGB", (6, 4), (200, 20, 20)).save(path)
    return path


def test_the_description_has_tensors_traffic_and_the_v2_form(scale_server: RunningServer) -> None:
    with httpx.Client(base_url=scale_server.http_url) as http:
        good = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [[1, 2]]}]}
        assert http.post("/v2/models/scale/infer", json=good).status_code == 200
        bad = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3]}]}
        assert http.post("/v2/models/scale/infer", json=bad).status_code == 400
        listing = http.get("/inferd/api/models").json()
        one = http.get("/inferd/api/models/scale").json()
        missing = http.get("/inferd/api/models/nope")
    assert listing["server"]["name"] == "inferd"
    [model] = listing["models"]
    assert model["name"] == "scale" and model["dialect"] == "native" and model["ready"] is True
    assert (model["source"], model["cache"]) == (None, None)  # a local target, no repository
    assert model["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}]
    assert model["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 2]}]
    assert model["requests"] == {"ok": 1, "error": 1}
    assert model["latency_ms"] > 0
    assert model["try"] == {
        "kind": "v2",
        "method": "POST",
        "path": "/v2/models/scale/infer",
        "example": {"x": [[1.0, 2.0]]},  # the last request answered (the bad one was not)
        "fields": [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}],
    }
    assert model["example_from"] == "the last request answered"
    assert one["name"] == "scale" and one["requests"]["ok"] >= 1
    assert missing.status_code == 404 and "nope" in missing.json()["error"]


def test_the_page_is_at_the_root_only_where_the_dialect_has_nothing_there(
    scale_server: RunningServer, abeja_server: RunningServer, deepaas_server: RunningServer
) -> None:
    with httpx.Client(base_url=scale_server.http_url) as http:
        root = http.get("/")
        assert root.status_code == 200 and "text/html" in root.headers["content-type"]
        assert http.get("/inferd").headers["location"] == "/inferd/"
        assert http.get("/inferd/static/inferd.js").status_code == 200
    with httpx.Client(base_url=abeja_server.http_url) as http:
        # ABEJA's `/` is the handler's: a GET reaches it
        assert http.get("/?q=1").json() == {"query": "q=1"}
        assert "<title>inferd: models</title>" in http.get("/inferd/").text
    with httpx.Client(base_url=deepaas_server.http_url) as http:
        assert "versions" in http.get("/").json()  # DEEPaaS's versions document
        assert http.get("/inferd/").status_code == 200


def test_a_v2_form_in_the_browser(scale_server: RunningServer) -> None:
    with browser.page() as tab:
        tab.goto(f"{scale_server.http_url}/inferd/models/scale")
        tab.wait_for("!!document.querySelector('#input-x')")
        tab.fill("#input-x", "[[1.5, 2], [3, 4]]")
        tab.click("#send")
        answer = tab.wait_for("document.querySelector('#answer-json')?.innerText")
        assert '"model_name": "scale"' in answer
        assert "15" in answer and "40" in answer
        assert "200" in tab.text("#answer-status")
        tab.fill("#input-x", "[[1, 2")  # the editor says what is wrong, and the server is not asked
        assert "Not valid JSON" in tab.text("#input-x-note")
        tab.screenshot("ui-native-v2-form.png")
        tab.goto(f"{scale_server.http_url}/inferd/")
        tab.wait_for("!!document.querySelector('tr[data-model=scale]')")
        row = tab.text("tr[data-model=scale]")
        assert "native" in row and "ready" in row and "ms" in row
        assert "FP32 [-1, 2]" in row
        shot = tab.screenshot("ui-models.png")
    assert shot.stat().st_size > 5000


def test_a_deepaas_form_uploads_a_file_and_shows_an_image(deepaas_server: RunningServer, png: Path) -> None:
    with browser.page() as tab:
        tab.goto(f"{deepaas_server.http_url}/inferd/models/uploads")
        tab.wait_for("!!document.querySelector('#arg-image')")
        assert tab.evaluate("document.querySelector('#arg-scale').value") == "1.5"
        tab.choose_files("#arg-image", png)
        tab.fill("#arg-scale", "3")
        tab.click("#send")
        answer = tab.wait_for("document.querySelector('#answer-json')?.innerText")
        assert '"scale": 3' in answer and '"name": "red.png"' in answer
        tab.fill("#arg-accept", "image/png")
        tab.click("#send")
        width = tab.wait_for("document.querySelector('#answer-image')?.naturalWidth")
        assert width == 6
        tab.screenshot("ui-deepaas-fields-form.png")


def test_an_abeja_form_posts_an_image_and_shows_the_answer(abeja_server: RunningServer, png: Path) -> None:
    with browser.page() as tab:
        tab.goto(f"{abeja_server.http_url}/inferd/models/main")
        tab.wait_for("!!document.querySelector('#upload')")
        tab.choose_files("#upload", png)
        tab.click("#send")
        assert tab.wait_for("document.querySelector('#answer-image')?.naturalHeight") == 4
        tab.goto(f"{abeja_server.http_url}/inferd/models/main")
        tab.wait_for("!!document.querySelector('#body')")
        tab.fill("#body", '{"case": "status"}')
        tab.click("#send")
        answer = tab.wait_for("document.querySelector('#answer-json')?.innerText")
        assert '"a": 1' in answer and "201" in tab.text("#answer-status")


# --- inferd models / inferd call read the same description ------------------------------------------


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "160"})


def test_call_sends_deepaas_arguments_and_uploads(deepaas_server: RunningServer, png: Path) -> None:
    url = deepaas_server.http_url
    called = invoke("call", "uploads", "--url", url, "--input", str(png), "--data", '{"scale": 2}', "--json")
    assert called.exit_code == 0, called.output
    assert json.loads(called.stdout)["predictions"] == {
        "bytes": png.stat().st_size,
        "scale": 2.0,
        "name": "red.png",
    }
    saved = png.parent / "back.png"
    args = ("--file", f"image={png}", "--data", '{"accept": "image/png"}', "--output", str(saved))
    assert invoke("call", "uploads", "--url", url, *args).exit_code == 0
    assert saved.read_bytes() == png.read_bytes()
    refused = invoke("call", "uploads", "--url", url, "--data", '{"scale": "big"}', "--json")
    assert refused.exit_code == 1 and "422" in refused.stderr
    assert "image" in json.loads(refused.stdout)  # DEEPaaS's field → messages


def test_call_posts_a_file_with_its_type_to_abeja(abeja_server: RunningServer, png: Path) -> None:
    saved = png.parent / "echo.png"
    called = invoke(
        "call", "main", "--url", abeja_server.http_url, "--input", str(png), "--output", str(saved)
    )
    assert called.exit_code == 0, called.output
    assert saved.read_bytes() == png.read_bytes()  # the handler echoes what is not JSON, typed as it came


def test_call_builds_v2_tensors_and_says_what_went_wrong(scale_server: RunningServer) -> None:
    url = scale_server.http_url
    called = invoke("call", "scale", "--url", url, "--data", "[[1, 2]]", "--json")
    assert called.exit_code == 0, called.output
    assert json.loads(called.stdout)["outputs"][0]["data"] == [10.0, 20.0]
    wrong = invoke("call", "scale", "--url", url, "--data", "[[1, 2, 3]]")
    assert wrong.exit_code == 1 and "400" in wrong.stderr and "shape" in wrong.stdout
    missing = invoke("call", "nope", "--url", url)
    assert missing.exit_code == 1 and "model 'nope' is not served here" in missing.stderr
    listed = invoke("models", "--url", url)
    assert (
        listed.exit_code == 0 and "scale" in listed.stdout and "POST /v2/models/scale/infer" in listed.stdout
    )
    nobody = invoke("models", "--url", f"http://127.0.0.1:{free_port()}")
    assert nobody.exit_code == 1 and "cannot reach" in nobody.stderr
