"""The try-it page starts from a real example (issue 43, "Pictures"): the model's own (``request.json``
beside ``examples/iris``, a scaffold's ``sample.json``), else the last request the server answered for
it, else zeros; it draws the model's traffic and latency as it goes, and shows inferd's version on every
page. Checked over a real server and in headless Chromium (screenshots under ``test-artifacts/``)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from inferd import __version__
from inferd.scaffold import create
from tests import browser
from tests.conftest import IRIS
from tests.servers import serve

HERE = Path(__file__).parent / "ui"


def test_the_iris_page_starts_from_its_request_json_and_charts_its_traffic() -> None:
    request = json.loads((Path(IRIS) / "request.json").read_text())
    [given] = request["inputs"]
    with serve(IRIS, "--no-grpc") as server:
        described = httpx.get(f"{server.http_url}/inferd/api/models/iris", timeout=30).json()
        assert described["example_from"] == "request.json"
        assert described["server"] == {"name": "inferd", "version": __version__}
        [field] = described["try"]["fields"]
        assert described["try"]["example"] == {field["name"]: given["data"]}
        with browser.page(size=(1280, 1100)) as tab:
            tab.goto(f"{server.http_url}/inferd/models/iris")
            area = f"#input-{field['name']}"
            tab.wait_for(f"!!document.querySelector('{area}')")
            assert json.loads(tab.evaluate(f"document.querySelector('{area}').value")) == given["data"]
            assert "request.json" in tab.text("#example-from")
            assert tab.text("#server") == f"inferd {__version__}"  # the version, on the model's page too
            for _ in range(4):  # sent as it is: the model answers the example
                tab.click("#send")
                tab.wait_for("document.querySelector('#answer-status')?.innerText.startsWith('200')")
                tab.evaluate("document.querySelector('#answer').hidden = true")
                tab.evaluate("new Promise((done) => setTimeout(done, 700))")
            # the charts: a point every 2 s, requests per second and latency, a line once two are in
            lines = "document.querySelectorAll('#charts [data-chart=rps] path.line').length"
            tab.wait_for(f"{lines} > 0", timeout=20)
            marks = "#charts [data-chart=latency] .line, #charts [data-chart=latency] .dot"
            assert tab.evaluate(f"document.querySelectorAll('{marks}').length") > 0
            assert "req/s" in tab.text("#charts [data-chart=rps]")
            tab.evaluate("document.querySelector('#answer').hidden = false")
            shot = tab.screenshot("ui-iris-example-and-charts.png")
            tab.goto(f"{server.http_url}/inferd/")
            tab.wait_for("!!document.querySelector('tr[data-model=iris]')")
            assert tab.text("#server") == f"inferd {__version__}"
    assert shot.stat().st_size > 10_000


def test_a_scaffold_page_starts_from_its_sample_json(tmp_path: Path) -> None:
    create(tmp_path / "my-model", "native")
    sample = json.loads((tmp_path / "my-model" / "sample.json").read_text())
    with serve("my-model", "--no-grpc", cwd=tmp_path) as server:
        described = httpx.get(f"{server.http_url}/inferd/api/models", timeout=30).json()["models"][0]
    assert described["example_from"] == "sample.json"
    assert described["try"]["example"] == sample


def test_without_an_example_the_last_request_answered_else_zeros() -> None:
    with serve(str(HERE / "scale.py"), "--no-grpc") as server, httpx.Client(base_url=server.http_url) as http:
        first = http.get("/inferd/api/models/scale").json()
        assert (first["example_from"], first["try"]["example"]) == ("zeros", {"x": [[0, 0]]})
        good = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [[7, 8]]}]}
        assert http.post("/v2/models/scale/infer", json=good).status_code == 200
        refused = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3]}]}
        assert http.post("/v2/models/scale/infer", json=refused).status_code == 400
        then = http.get("/inferd/api/models/scale").json()
        assert then["example_from"] == "the last request answered"
        assert then["try"]["example"] == {"x": [[7.0, 8.0]]}  # the refused one was not kept
        # a large request is not kept (the form would be a wall of numbers): the small one stays
        large = {"inputs": [{"name": "x", "shape": [200, 2], "datatype": "FP32", "data": [[1, 1]] * 200}]}
        assert http.post("/v2/models/scale/infer", json=large).status_code == 200
        assert http.get("/inferd/api/models/scale").json()["try"]["example"] == {"x": [[7.0, 8.0]]}
