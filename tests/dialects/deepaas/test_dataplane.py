"""DEEPaaS predict on the data plane's one entrance: the server calls its route directly (a bare
endpoint on a fixed path, whatever the base path), and ``inferd_requests_total`` counts its answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from inferd.config.settings import Settings
from inferd.dialects.deepaas.predict import Predict
from inferd.dialects.deepaas.test_model import NAME
from inferd.server.app import build_runtime, create_app
from inferd.server.routing import DirectRoutes, IndexedRouter, direct_routes

FILES = {"data": ("foo.txt", b"x", "text/plain"), "parameter": (None, "1")}


def built_app(data_dir: Path, base_path: str) -> Starlette:
    """The app ``inferd serve --dialect deepaas --model-name deepaas-test`` builds (the routes are
    built from the registered models, before they load)."""
    settings = Settings(dialect="deepaas", model_name=NAME, data_dir=data_dir, base_path=base_path)
    return create_app(build_runtime(settings))


@pytest.mark.parametrize("base_path", ["", "/deepaas"])
def test_predict_is_a_direct_route(tmp_path: Path, base_path: str) -> None:
    app = built_app(tmp_path, base_path)
    path = f"{base_path}/v2/models/{NAME}/predict/"
    assert isinstance(app.router, IndexedRouter)
    assert isinstance(direct_routes(app.router.fixed)[path].endpoint, Predict)
    (direct,) = [middleware for middleware in app.user_middleware if middleware.cls is DirectRoutes]
    assert path in direct.kwargs["routes"]  # what the app's DirectRoutes is given


def test_the_direct_path_answers_as_deepaas(builtin: httpx.Client) -> None:
    predict = f"/v2/models/{NAME}/predict/"
    answer = builtin.post(predict, files=FILES)
    assert (answer.status_code, answer.headers["content-type"]) == (200, "application/json; charset=utf-8")
    assert answer.json()["labels"] == [{"label": "foo", "probability": 1.0}]
    text = builtin.post(predict, files=FILES, headers={"Accept": "text/plain"})
    assert text.headers["content-type"] == "text/plain; charset=utf-8"
    missing = builtin.post(predict)
    assert (missing.status_code, missing.headers["content-type"]) == (422, "application/json; charset=utf-8")
    wrong = builtin.get(predict)
    assert (wrong.status_code, wrong.text, wrong.headers["allow"]) == (405, "405: Method Not Allowed", "POST")
    assert wrong.headers["content-type"] == "text/plain; charset=utf-8"


def requests_total(client: httpx.Client, model: str, outcome: str) -> float:
    wanted = f'inferd_requests_total{{model="{model}",outcome="{outcome}",protocol="deepaas"}} '
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(wanted):
            return float(line[len(wanted) :])
    return 0.0


def test_requests_are_counted_by_outcome(demo: httpx.Client) -> None:
    ok, error = requests_total(demo, "classy", "ok"), requests_total(demo, "classy", "error")
    assert demo.post("/v2/models/classy/predict/", params={"number": "1"}).status_code == 200
    assert demo.post("/v2/models/classy/predict/", params={"number": "13"}).status_code == 500  # it raised
    assert demo.post("/v2/models/classy/predict/").status_code == 422  # an answer with an error status
    assert demo.get("/v2/models/classy/predict/").status_code == 405  # not a call: not counted
    assert requests_total(demo, "classy", "ok") == ok + 1
    assert requests_total(demo, "classy", "error") == error + 2
