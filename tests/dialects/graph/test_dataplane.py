"""The graph's routes on the data plane: predictions and feedback are bare endpoints the server calls
directly, and a graph that is not ready gets Seldon's error body, uncounted."""

from __future__ import annotations

import httpx

from inferd.server.routing import direct_routes
from tests.dialects.seldon.conftest import PREDICTION_AND_FEEDBACK_PATHS, requests_total, unloaded_app
from tests.servers import serve_asgi


def test_predictions_and_feedback_are_called_directly() -> None:
    app = unloaded_app("graph", "direct-graph", registered=True)
    assert set(PREDICTION_AND_FEEDBACK_PATHS) <= set(direct_routes(app.router.fixed))  # type: ignore[attr-defined]


def test_an_unready_graph_gets_seldons_error_uncounted() -> None:
    with serve_asgi(unloaded_app("graph", "unready-graph", registered=True)) as url:
        for path in PREDICTION_AND_FEEDBACK_PATHS:
            answer = httpx.post(url + path, json={"data": {"ndarray": [1]}})
            assert answer.status_code == 503
            assert answer.headers["access-control-allow-origin"] == "*"
            assert answer.json()["status"]["info"].startswith("model 'unready-graph' is not ready")
        preflight = httpx.options(url + "/predict", headers={"Access-Control-Request-Headers": "x-a"})
        assert (preflight.status_code, preflight.headers["access-control-allow-headers"]) == (200, "x-a")
        wrong = httpx.get(url + "/api/v1.0/predictions")
        assert wrong.status_code == 405 and wrong.json()["status"]["info"].startswith(
            "405 Method Not Allowed"
        )
    assert (
        requests_total("unready-graph", "seldon", "ok")
        == requests_total("unready-graph", "seldon", "error")
        == 0
    )
