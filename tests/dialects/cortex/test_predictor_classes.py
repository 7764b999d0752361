"""Cortex 0.12-0.25 predictor classes served unchanged by a real ``inferd serve``: each release's
cortex.yaml layout, the payload and response types Cortex's server parsed and answered, V2, and the
start-up errors."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inferd.dialects import detect
from tests.dialects.cortex import projects, projects_classes
from tests.dialects.cortex.projects import SETOSA, VIRGINICA
from tests.servers import RunningServer, inferd_command, serve


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cortex-classes")
    projects.iris_onnx(folder / "iris.onnx")
    projects_classes.iris_pickle(folder / "model.pkl")
    return folder


def project(root: Path, name: str, files: dict[str, str], models: dict[str, str] | None = None) -> Path:
    folder = projects.write(root / name, files)
    for relative, built in (models or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / built, folder / relative)
    return folder


@pytest.fixture(scope="module")
def v12(root: Path) -> Iterator[RunningServer]:
    folder = project(root, "v12", projects_classes.V12, {"model.pkl": "model.pkl"})
    with serve(str(folder / "cortex.yaml"), "--no-grpc") as server:
        yield server


@pytest.fixture(scope="module")
def v17(root: Path) -> Iterator[RunningServer]:
    folder = project(root, "v17", projects_classes.V17, {"iris.onnx": "iris.onnx"})
    with serve(str(folder), "--no-grpc") as server:
        yield server


@pytest.fixture(scope="module")
def v25(root: Path) -> Iterator[RunningServer]:
    models = {
        "models/iris.onnx": "iris.onnx",
        "models/iris-versions/2/model.onnx": "iris.onnx",
        "model.pkl": "model.pkl",
    }
    folder = project(root, "v25", projects_classes.V25, models)
    with serve(str(folder), "--no-grpc") as server:
        yield server


def test_each_layout_is_detected(root: Path) -> None:
    for name, files in (
        ("d12", projects_classes.V12),
        ("d17", projects_classes.V17),
        ("d25", projects_classes.V25),
    ):
        folder = projects.write(root / name, files)
        assert detect(str(folder)).name == "cortex"
        assert detect(str(folder / "cortex.yaml")).name == "cortex"


def test_v12_python_predictor_with_config_at_deployment_endpoint(v12: RunningServer) -> None:
    with v12.http() as http:
        answer = http.post("/iris/classifier", json=SETOSA)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/plain")
        assert answer.text == "setosa"
        assert http.post("/iris/classifier", json=VIRGINICA).text == "virginica"
        assert http.post("/predict", json=SETOSA).text == "setosa"  # the only API
        summary = http.get("/iris/classifier").json()
        assert summary == {
            "message": "make a prediction by sending a post request to this endpoint with a json payload"
        }


def test_v12_malformed_json_is_400_json_and_the_server_goes_on(v12: RunningServer) -> None:
    with v12.http() as http:
        answer = http.post(
            "/iris/classifier", content=b'{"sepal_length": ', headers={"content-type": "application/json"}
        )
        assert answer.status_code == 400
        assert "error" in answer.json()
        assert http.post("/iris/classifier", json=SETOSA).text == "setosa"


def test_v17_onnx_predictor_class_and_its_client(v17: RunningServer) -> None:
    with v17.http() as http:
        answer = http.post("/iris/onnx", json=VIRGINICA)
        assert answer.status_code == 200, answer.text
        assert answer.text == "virginica"
        summary = http.get("/iris/onnx").json()
        assert summary["model_signatures"] == {"float_input": {"shape": [None, 4], "type": "float32"}}
        v2 = http.post("/v2/models/iris-onnx/infer", json=_v2_json(SETOSA)).json()
        assert v2["outputs"][0]["data"] == ['"setosa"']


def test_v25_payload_and_response_types(v25: RunningServer) -> None:
    with v25.http() as http:
        answer = http.post("/v1/echo?q=42", json={"a": 1}, headers={"x-test": "yes"})
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        body = answer.json()
        assert body["greeting"] == "hello" and body["payload"] == {"a": 1}
        assert body["q"] == "42" and body["header"] == "yes"
        text = http.post("/v1/echo", content="quiet", headers={"content-type": "text/plain"})
        assert text.text == ">QUIET!" and text.headers["content-type"].startswith("text/plain")
        raw = http.post(
            "/v1/echo", content=b"\x00\x01\x02", headers={"content-type": "application/octet-stream"}
        )
        assert raw.content == b"\x02\x01\x00"
        assert raw.headers["content-type"] == "application/octet-stream"
        form = http.post("/v1/echo", data={"name": "iris"})
        assert (form.status_code, form.text) == (201, "form iris")
        assert form.headers["content-type"].startswith("text/csv")
        assert form.headers["access-control-allow-origin"] == "*"
        preflight = http.options(
            "/v1/echo", headers={"origin": "http://x", "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "*"
        # post_predict ran after each of the four calls above
        assert http.post("/v1/echo", json={}).json()["calls"] == 4


def test_v25_errors_as_cortex_answered_them(v25: RunningServer) -> None:
    with v25.http() as http:
        refused = http.post("/v1/echo", json={"fail": 1})
        assert (refused.status_code, refused.text) == (422, "fail: not a field I take")
        crashed = http.post("/v1/echo", json={"crash": 1})
        assert (crashed.status_code, crashed.text) == (500, "internal server error")
        assert (
            http.post("/v1/echo", content=b"\xff", headers={"content-type": "text/plain"}).status_code == 400
        )
        assert http.post("/v1/echo", json={"a": 2}).json()["payload"] == {"a": 2}
    assert "the predictor crashed" in v25.wait_for_log("the predictor crashed")


def test_v25_onnx_batch_and_v2(v25: RunningServer) -> None:
    rows = [list(SETOSA.values()), list(VIRGINICA.values())]
    with v25.http() as http:
        assert http.post("/iris", json={"rows": rows}).json() == [0, 2]
        v2 = http.post("/v2/models/echo/infer", json=_v2_json({"b": 3})).json()
        assert '"payload":{"b":3}' in v2["outputs"][0]["data"][0]
        bad = http.post(
            "/v2/models/echo/infer",
            json={"inputs": [{"name": "json", "datatype": "BYTES", "shape": [1], "data": ["{x"]}]},
        )
        assert bad.status_code == 400 and "not JSON" in bad.json()["error"]


def _v2_json(payload: dict[str, object]) -> dict[str, object]:
    import json

    return {"inputs": [{"name": "json", "datatype": "BYTES", "shape": [1], "data": [json.dumps(payload)]}]}


def test_a_constructor_that_raises_ends_with_1_and_the_users_frames(root: Path) -> None:
    folder = projects.write(root / "init-raises", projects_classes.INIT_RAISES)
    command = inferd_command("serve", str(folder), "--port", "0", "--no-grpc")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "error: model 'broken' failed to load: RuntimeError: weights.bin is missing"
    assert "predictor.py" in done.stderr and "load_weights" in done.stderr
    assert "inferd/" not in done.stderr.replace(str(folder), ""), done.stderr


@pytest.mark.parametrize("name", sorted(projects_classes.BAD))
def test_bad_projects_exit_2_naming_the_problem(name: str, root: Path) -> None:
    files, message = projects_classes.BAD[name]
    folder = projects.write(root / f"bad-{name}", files)
    command = inferd_command("serve", str(folder), "--port", "0", "--no-grpc")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert message in " ".join(done.stderr.split())


def test_unknown_predictor_field_names_the_release(root: Path) -> None:
    files = {"cortex.yaml": "- name: x\n  predictor:\n    type: python\n    path: p.py\n    gpu_count: 1\n"}
    folder = projects.write(root / "unknown-field", files)
    done = subprocess.run(
        inferd_command("serve", str(folder), "--port", "0"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "api x: predictor: gpu_count: key is not supported (Cortex 0.13-0.19 layout)" in done.stderr
    assert httpx is not None


def test_v25_multi_model_onnx_and_a_python_client_model(v25: RunningServer) -> None:
    """``models.paths``: the predictor picks a model by name (a file, or a folder of versions); no name
    or an unknown one is the client's error (Cortex's 500). ``model_path`` of a python predictor is
    loaded once through its own ``load_model``."""
    row = list(VIRGINICA.values())
    with v25.http() as http:
        for name in ("flat", "versioned"):
            answer = http.post(f"/multi?model={name}", json={"row": row})
            assert answer.json() == {"model": name, "label": 2}, answer.text
        assert http.post("/multi?model=other", json={"row": row}).status_code == 500
        assert http.post("/multi", json={"row": row}).status_code == 500
        signatures = http.get("/multi").json()["model_signatures"]
        assert set(signatures) == {"flat", "versioned"}
        for _ in range(2):
            assert http.post("/pickled", json={"row": row}).json() == {"label": 2, "loads": 1}
    for said in (
        "'other' model wasn't found in the list of available models",
        "model_name was not specified, choose one of the following: ['flat', 'versioned']",
    ):
        assert said in v25.wait_for_log(said)


def test_v35_handler_class_answers_its_methods(root: Path) -> None:
    folder = project(root, "v35", projects_classes.V35, {"model.pkl": "model.pkl"})
    row = list(VIRGINICA.values())
    with serve(str(folder), "--no-grpc") as server, server.http() as http:
        assert http.post("/handled", json={"row": row}).json() == {"label": 2}
        assert http.get("/handled?q=1").json() == {"scale": 2, "q": "1"}
        refused = http.put("/handled", json={})
        assert (refused.status_code, refused.json()) == (405, {"detail": "Method Not Allowed"})
        v2 = http.post("/v2/models/handled/infer", json=_v2_json({"row": row})).json()
        assert v2["outputs"][0]["data"] == ['{"label":2}']
