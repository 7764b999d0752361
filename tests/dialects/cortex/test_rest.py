"""The Cortex REST protocol against real servers: responses, errors, routes, V2 and metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import numpy as np
import pytest

from inferd.config.settings import Settings
from inferd.dialects.cortex.rest import METHOD_NOT_ALLOWED, NOT_FOUND, Predict
from inferd.server.app import build_runtime, create_app
from inferd.server.routing import DirectRoutes
from tests.dialects.cortex.conftest import make_project
from tests.dialects.cortex.projects import SETOSA, VIRGINICA
from tests.servers import RunningServer

CORS = {"access-control-allow-origin": "*", "access-control-allow-headers": "*"}


def assert_cors(response: httpx.Response) -> None:
    for key, value in CORS.items():
        assert response.headers[key] == value


def test_worked_example(v08: httpx.Client) -> None:
    response = v08.post("/iris/classifier", json=SETOSA)
    assert response.status_code == 200, response.text
    assert response.content == b'"iris-setosa"\n'
    assert response.headers["content-type"] == "application/json"
    assert_cors(response)
    assert v08.post("/iris/classifier", json=VIRGINICA).json() == "iris-virginica"


def test_v10_handler_reads_project_file_and_metadata(v10: httpx.Client) -> None:
    response = v10.post("/iris/classifier", json=SETOSA)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["label"] == "iris-setosa"
    assert set(body["probabilities"]) == {"0", "1", "2"}
    assert body["probabilities"]["0"] > 0.5


def test_sorted_compact_json_with_numpy(v08: httpx.Client) -> None:
    response = v08.post("/iris/adder", json={"a": [1, 2], "b": [3, 4.5]})
    assert response.status_code == 200, response.text
    assert response.content == b'{"outputs":["sum"],"sum":[[4.0,6.5]],"total":10.5}\n'


def test_zipmap_output_without_handler(v08: httpx.Client) -> None:
    response = v08.post("/iris/raw", json={"float_input": [5.2, 3.6, 1.4, 0.3]})
    assert response.status_code == 200, response.text
    label, probabilities = response.json()
    assert label == [0]
    assert sorted(probabilities[0]) == ["0", "1", "2"]


def test_bare_list_for_single_input(v08: httpx.Client) -> None:
    response = v08.post("/iris/raw", json=[[6.7, 3.0, 5.2, 2.3]])
    assert response.status_code == 200, response.text
    assert response.json()[0] == [2]


@pytest.mark.parametrize(
    ("path", "sample", "message"),
    [
        ("/iris/raw", {"other": 1}, 'prediction failed: error: missing key "float_input"'),
        ("/iris/raw", {"float_input": None}, 'prediction failed: error: missing key "float_input"'),
        (
            "/iris/raw",
            {"float_input": [1, 2, 3, 4, 5, 6, 7, 8]},
            'prediction failed: error: key "float_input": failed to convert to numpy array: '
            "cannot reshape array of size 8 into shape (1,4)",
        ),
        (
            "/iris/classifier",
            {"as_text": ["a", "b", "c", "d"]},
            "prediction failed: error: key \"float_input\": expected dtype 'float32' but found '<U1'",
        ),
        (
            "/iris/classifier",
            {"boom": True},
            "prediction failed: error: handlers/classifier.py: pre_inference request handler: kaboom: "
            "runtime exception",
        ),
        (
            "/iris/adder",
            [1, 2],
            'prediction failed: error: expected sample to be a dictionary with keys "a", "b"',
        ),
        ("/iris/adder", {"a": [1, 2]}, 'prediction failed: error: missing key "b"'),
    ],
)
def test_prediction_failures_are_406(v08: httpx.Client, path: str, sample: object, message: str) -> None:
    response = v08.post(path, json=sample)
    assert response.status_code == 406
    assert response.text == message
    assert response.headers["content-type"].startswith("text/html")
    assert_cors(response)
    assert v08.post("/iris/classifier", json=SETOSA).json() == "iris-setosa"


def test_malformed_json_is_400(v08: httpx.Client) -> None:
    for body in (b"{not json", b""):
        response = v08.post("/iris/raw", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400
        assert response.text == "malformed json"
        assert_cors(response)


def test_non_json_content_type_means_no_sample(misc: httpx.Client) -> None:
    response = misc.post("/echo", content=b"{not json", headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert response.json()["sample"] is None


def test_healthz(v08: httpx.Client) -> None:
    response = v08.get("/healthz")
    assert response.status_code == 200
    assert response.content == b'{"ok":true}\n'


def test_signature(v08: httpx.Client, v10: httpx.Client) -> None:
    expected = {"signature": {"float_input": {"shape": [None, 4], "type": "float32"}}}
    assert v08.get("/iris/classifier/signature").json() == expected
    assert v10.get("/iris/classifier/signature").json() == expected
    assert v10.get("/predict/signature").json() == expected
    adder = v08.get("/iris/adder/signature").json()["signature"]
    assert adder == {name: {"shape": [None, 2], "type": "float32"} for name in ("a", "b")}


def test_predict_alias_only_for_one_api(v08: httpx.Client, v10: httpx.Client) -> None:
    assert v10.post("/predict", json=SETOSA).json()["label"] == "iris-setosa"
    assert v08.post("/predict", json=SETOSA).json() == {"error": NOT_FOUND}


def test_routing_errors_as_the_original(v08: httpx.Client) -> None:
    """Cortex's catch-all answered unknown paths and wrong methods with 500; V2 and /metrics keep theirs."""
    for response, message in (
        (v08.get("/iris/classifier"), METHOD_NOT_ALLOWED),
        (v08.post("/iris/classifier/signature"), METHOD_NOT_ALLOWED),
        (v08.delete("/no/such/api"), NOT_FOUND),
    ):
        assert response.status_code == 500
        assert response.json() == {"error": message}
        assert_cors(response)
    assert v08.get("/v2/models/classifier/nothing").status_code == 404
    assert v08.get("/v2/models/classifier/infer").status_code == 405
    assert v08.post("/metrics").status_code == 405
    assert v08.get("/metrics").status_code == 200


def test_float32_written_as_its_float64_value(v08: httpx.Client) -> None:
    """Cortex widened numpy float32 to Python floats before writing JSON."""
    response = v08.post("/iris/adder", json={"a": [0.1, 0], "b": [0.2, 0]})
    assert response.status_code == 200, response.text
    assert response.json()["sum"] == [[float(np.float32(0.1) + np.float32(0.2)), 0.0]]
    assert b"0.30000001192092896" in response.content


def test_preflight_has_cors(v10: httpx.Client) -> None:
    response = v10.options("/iris/classifier")
    assert response.status_code == 200
    assert_cors(response)


def test_v2_serves_the_raw_model(v08: httpx.Client) -> None:
    metadata = v08.get("/v2/models/classifier").json()
    assert metadata["inputs"] == [{"name": "float_input", "datatype": "FP32", "shape": [-1, 4]}]
    assert [output["name"] for output in metadata["outputs"]] == ["output_label"]
    request = {
        "inputs": [{"name": "float_input", "shape": [1, 4], "datatype": "FP32", "data": [6.7, 3, 5.2, 2.3]}]
    }
    response = v08.post("/v2/models/classifier/infer", json=request)
    assert response.status_code == 200, response.text
    assert response.json()["outputs"][0]["data"] == [2]
    two = {
        "inputs": [{"name": name, "shape": [1, 2], "datatype": "FP32", "data": [1, 2]} for name in ("a", "b")]
    }
    assert v08.post("/v2/models/adder/infer", json=two).json()["outputs"][0]["data"] == [2, 4]


def test_tracker_metrics(v08: httpx.Client) -> None:
    v08.post("/iris/classifier", json=VIRGINICA)
    v08.post("/iris/adder", json={"a": [1, 2], "b": [3, 4]})
    text = v08.get("/metrics").text
    assert 'cortex_tracker_predictions_total{api="classifier",class="iris-virginica"}' in text
    assert 'cortex_tracker_prediction_value_count{api="adder"}' in text
    assert 'inferd_requests_total{model="classifier",outcome="ok",protocol="cortex"}' in text


def requests_total(client: httpx.Client, model: str, outcome: str) -> float:
    labels = f'model="{model}",outcome="{outcome}",protocol="cortex"'
    pattern = rf"^inferd_requests_total\{{{labels}\}} (\S+)$"
    found = re.search(pattern, client.get("/metrics").text, re.MULTILINE)
    return 0.0 if found is None else float(found.group(1))


def test_requests_counted_by_outcome(v08: httpx.Client) -> None:
    """A prediction counts as ok, a prediction failure (406) as an error; a malformed body (400) never
    reached the model and is not counted."""
    before = {outcome: requests_total(v08, "adder", outcome) for outcome in ("ok", "error")}
    assert v08.post("/iris/adder", json={"a": [1, 2], "b": [3, 4]}).status_code == 200
    assert v08.post("/iris/adder", json={"a": [1, 2]}).status_code == 406
    malformed = v08.post("/iris/adder", content=b"{", headers={"content-type": "application/json"})
    assert malformed.status_code == 400
    assert requests_total(v08, "adder", "ok") == before["ok"] + 1
    assert requests_total(v08, "adder", "error") == before["error"] + 1


def test_api_routes_take_the_direct_path(tmp_path: Path, models_dir: Path) -> None:
    """An API's paths are fixed and its predict endpoint is bare, so the built app calls it straight
    from the middleware stack, at its endpoint and at ``/predict`` (a single API)."""
    files = {"cortex.yaml": "- kind: api\n  name: adder\n  endpoint: /math/add\n  model: adder.onnx\n"}
    project = make_project(tmp_path, "single", files, {"adder.onnx": models_dir / "adder.onnx"})
    app = create_app(build_runtime(Settings(target=str(project))))
    (direct,) = [layer for layer in app.user_middleware if layer.cls is DirectRoutes]
    routes = direct.kwargs["routes"]
    for path in ("/math/add", "/predict"):
        assert isinstance(routes[path].endpoint, Predict)
        assert routes[path].methods == {"POST"}
    assert {"/math/add/signature", "/predict/signature", "/healthz"} <= routes.keys()


def test_debug_logs_each_stage(v08: httpx.Client, v08_server: RunningServer) -> None:
    response = v08.post("/iris/classifier?debug=TRUE", json=VIRGINICA)
    assert response.json() == "iris-virginica"
    log = v08_server.wait_for_log("post_inference: 'iris-virginica'")
    for stage in ("sample: {", "pre_inference: {'float_input'", "prediction: [array(", "post_inference: "):
        assert stage in log


def test_handler_logger_shim(v08_server: RunningServer, v08: httpx.Client) -> None:
    v08.post("/iris/classifier", json=SETOSA)
    assert "classifying" in v08_server.log
    assert "using pre_inference request handler provided in handlers/classifier.py" in v08_server.log


def test_dill_pickled_handler(misc: httpx.Client) -> None:
    response = misc.post("/pickled", json={"x": 1.5, "y": 2})
    assert response.status_code == 200, response.text
    assert response.json() == {"doubled": [[3.0, 4.0]]}


def test_predictor(misc: httpx.Client) -> None:
    response = misc.post("/echo", json={"q": 1})
    assert response.json() == {"greeting": "hello", "model": "adder.onnx", "sample": {"q": 1}}
    failed = misc.post("/echo", json="fail")
    assert failed.status_code == 406
    assert failed.text == "prediction failed: error: predictor.py: predict: no echo: runtime exception"
    assert misc.post("/predict", json=1).status_code == 500


def test_predictor_over_v2_answers_what_its_endpoint_answers(misc: httpx.Client) -> None:
    """A predictor was listed READY over V2 and answered every infer with 500: one BYTES ``json``
    tensor in and out, each element a sample and its answer as the endpoint gives it."""
    metadata = misc.get("/v2/models/echo").json()
    assert metadata["inputs"] == [{"name": "json", "datatype": "BYTES", "shape": [-1]}]
    assert metadata["outputs"] == [{"name": "json", "datatype": "BYTES", "shape": [-1]}]
    samples = [{"q": 1}, [1, 2]]
    request = {
        "inputs": [
            {"name": "json", "datatype": "BYTES", "shape": [2], "data": list(map(json.dumps, samples))}
        ]
    }
    answer = misc.post("/v2/models/echo/infer", json=request)
    assert answer.status_code == 200, answer.text
    [output] = answer.json()["outputs"]
    assert output["shape"] == [2]
    assert [json.loads(item) for item in output["data"]] == [
        misc.post("/echo", json=s).json() for s in samples
    ]
    broken = {"inputs": [{"name": "json", "datatype": "BYTES", "shape": [1], "data": ["{not json"]}]}
    refused = misc.post("/v2/models/echo/infer", json=broken)
    assert refused.status_code == 400 and "an element is not JSON" in refused.json()["error"]


def test_requirements_installed_only_when_asked(
    misc_server: RunningServer, v10_server: RunningServer
) -> None:
    assert "installed " in misc_server.log and "requirements.txt" in misc_server.log
    assert "requirements.txt" not in v10_server.log


def test_v10_tracker_key(v10: httpx.Client) -> None:
    v10.post("/iris/classifier", json=VIRGINICA)
    text = v10.get("/metrics").text
    assert 'cortex_tracker_predictions_total{api="iris",class="iris-virginica"}' in text
