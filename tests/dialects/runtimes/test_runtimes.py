"""Model files served with no code: a real file of each format, built in the test, served by a real
``inferd serve`` (the file itself, and a repository of model folders, bare or with MLServer's
model-settings.json), called over V2 (httpx, tritonclient http and grpc) and KServe's V1."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from tests.dialects.runtimes.conftest import ROWS, mlserver, write_sklearn
from tests.servers import ROOT, RunningServer, inferd_command, serve, with_this_tree

TOKEN = "runtimes-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def sklearn_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, object]]:
    """``inferd serve .../iris/model.joblib``, behind a token and a 64 KiB body limit."""
    folder = tmp_path_factory.mktemp("sk") / "iris"
    estimator = write_sklearn(folder)
    with serve(
        str(folder / "model.joblib"), "--auth-token", TOKEN, "--max-body-size", str(MAX_BODY)
    ) as server:
        yield server, estimator


@pytest.fixture(scope="module")
def repository(models: Path) -> Iterator[RunningServer]:
    with serve(f"--repository={models}") as server:
        yield server


def v2(name: str, rows: list[list[float]], **extra: object) -> dict[str, object]:
    shape = [len(rows), len(rows[0])]
    return {"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "data": rows}], **extra}


def test_a_model_file_is_served_over_v2_and_v1(sklearn_file: tuple[RunningServer, object]) -> None:
    server, estimator = sklearn_file
    expected = estimator.predict(np.array(ROWS)).tolist()  # type: ignore[attr-defined]
    probabilities = estimator.predict_proba(np.array(ROWS))  # type: ignore[attr-defined]
    assert server.models == ["iris"]
    with server.http(headers=AUTH) as http:
        metadata = http.get("/v2/models/iris").json()
        assert metadata["inputs"] == [{"name": "input-0", "datatype": "FP64", "shape": [-1, 4]}]
        assert [output["name"] for output in metadata["outputs"]][:2] == ["predict", "predict_proba"]
        answer = http.post("/v2/models/iris/infer", json=v2("iris", ROWS)).json()
        assert answer["outputs"][0]["name"] == "predict" and answer["outputs"][0]["data"] == expected
        both = http.post(
            "/v2/models/iris/infer", json=v2("iris", ROWS, outputs=[{"name": "predict_proba"}])
        ).json()
        assert np.allclose(np.reshape(both["outputs"][0]["data"], (2, 3)), probabilities)
        by_parameter = http.post(
            "/v2/models/iris/infer", json=v2("iris", ROWS, parameters={"method": "predict_proba"})
        ).json()
        assert by_parameter["outputs"][0]["name"] == "predict_proba"
        # KServe's V1: readiness, the model list, the row and the columnar forms
        assert http.get("/v1/models/iris").json() == {"name": "iris", "ready": True}
        assert http.get("/v1/models").json() == {"models": ["iris"]}
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).json() == {
            "predictions": expected
        }
        columnar = http.post(
            "/v1/models/iris:predict", json={"inputs": ROWS, "parameters": {"method": "predict_proba"}}
        ).json()
        assert np.allclose(columnar["outputs"], probabilities)
    with server.http() as anonymous:  # V1 is behind the token as V2's infer is
        assert anonymous.post("/v1/models/iris:predict", json={"instances": ROWS}).status_code == 401
        assert anonymous.get("/v1/models/iris").status_code == 401


@pytest.mark.parametrize(
    ("path", "body", "status", "fragment"),
    [
        ("/v1/models/iris:predict", {"instances": [[1.0, 2.0]]}, 400, "takes 4 features per row"),
        ("/v1/models/iris:predict", {"instances": [["a", "b", "c", "d"]]}, 400, "could not convert"),
        ("/v1/models/iris:predict", {"instances": [[1, 2, 3, 4], [1, 2]]}, 400, "rectangular"),
        ("/v1/models/iris:predict", {"rows": ROWS}, 400, 'Expected "instances" or "inputs"'),
        ("/v1/models/iris:predict", b"{not json", 400, "Invalid JSON"),
        ("/v1/models/nope:predict", {"instances": ROWS}, 404, "nope"),
        ("/v1/models/iris:explain", {"instances": ROWS}, 501, "explain is not implemented"),
        ("/v2/models/iris/infer", v2("iris", [[1.0, 2.0, 3.0]]), 400, "takes 4 features per row"),
        ("/v2/models/iris/infer", v2("iris", ROWS, parameters={"method": "fit"}), 400, "no method 'fit'"),
        ("/v2/models/iris/infer", v2("iris", ROWS, outputs=[{"name": "fit"}]), 400, "unknown output 'fit'"),
    ],
)
def test_bad_input_is_answered_with_json_and_the_server_keeps_serving(
    sklearn_file: tuple[RunningServer, object], path: str, body: object, status: int, fragment: str
) -> None:
    server, _ = sklearn_file
    with server.http(headers=AUTH) as http:
        content = body if isinstance(body, bytes) else httpx.Request("POST", "/", json=body).content
        answer = http.post(path, content=content, headers={"Content-Type": "application/json"})
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert fragment in answer.json()["error"]
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).status_code == 200


def test_a_v1_body_over_the_limit_is_refused_without_being_held(
    sklearn_file: tuple[RunningServer, object],
) -> None:
    """The body limit holds for V1 as for V2: a body declaring 1 GiB is answered 413 at once."""
    server, _ = sklearn_file
    before = server.peak_memory()
    with server.http(headers=AUTH) as http:
        answer = http.post(
            "/v1/models/iris:predict",
            content=b'{"instances": [' + b"1.0, " * (MAX_BODY // 4) + b"1.0]}",
            headers={"Content-Type": "application/json"},
        )
        assert answer.status_code == 413 and "error" in answer.json()
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).status_code == 200
    assert server.peak_memory() - before < 50 * 2**20


def test_a_repository_serves_each_format_bare_or_named_by_mlserver_settings(
    repository: RunningServer,
) -> None:
    assert sorted(repository.models) == ["iris", "lgb", "lgbbst", "tree", "xgb"]
    with repository.http() as http:
        tree = http.get("/v2/models/tree").json()  # the ONNX signature
        assert tree["platform"] == "onnx_onnxv1"
        assert tree["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 4]}]
        assert {output["name"] for output in tree["outputs"]} == {"label", "probabilities"}
        assert http.get("/v2/models/xgb").json()["inputs"][0]["shape"] == [-1, 4]
        regression = http.post("/v1/models/lgb:predict", json={"instances": [[0.0, 0.0, 0.0]] * 2}).json()
        assert len(regression["predictions"]) == 2 and isinstance(regression["predictions"][0], float)
        # LightGBM saved as model.bst: XGBoost is tried first, then LightGBM reads it
        ambiguous = http.post("/v1/models/lgbbst:predict", json={"instances": [[1.0, 0.0, 0.0]]})
        assert ambiguous.status_code == 200, ambiguous.text
        rows = http.post("/v1/models/tree:predict", json={"instances": ROWS}).json()["predictions"]
        assert [row["label"] for row in rows] == [0, 2] and len(rows[0]["probabilities"]) == 3
        wrong = http.post(
            "/v2/models/tree/infer",
            json={"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP64", "data": ROWS[0]}]},
        )
        assert wrong.status_code == 400 and "FP32" in wrong.json()["error"]


def test_tritonclient_calls_the_runtimes_over_http_and_grpc(repository: RunningServer) -> None:
    data = np.array(ROWS, dtype=np.float32)
    client = httpclient.InferenceServerClient(repository.http_address)
    try:
        inputs = [httpclient.InferInput("input-0", list(data.shape), "FP32")]
        inputs[0].set_data_from_numpy(data)
        outputs = [httpclient.InferRequestedOutput("predict_proba")]
        result = client.infer("xgb", inputs, outputs=outputs)
        probabilities = result.as_numpy("predict_proba")
        assert probabilities.shape == (2, 3) and probabilities.argmax(axis=1).tolist() == [0, 2]
    finally:
        client.close()
    assert repository.grpc_address is not None
    grpc = grpcclient.InferenceServerClient(repository.grpc_address)
    try:
        tensor = grpcclient.InferInput("X", list(data.shape), "FP32")
        tensor.set_data_from_numpy(data)
        result = grpc.infer("tree", [tensor])
        assert result.as_numpy("label").tolist() == [0, 2]
        assert grpc.get_model_metadata("tree").platform == "onnx_onnxv1"
    finally:
        grpc.close()


def inferd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = with_this_tree({**os.environ, **(env or {})})
    return subprocess.run(
        inferd_command(*args), capture_output=True, text=True, timeout=60, cwd=ROOT, env=environment
    )


def test_a_missing_library_exits_2_with_the_pip_line(models: Path, tmp_path: Path) -> None:
    """xgboost hidden from a real ``inferd serve`` (a sitecustomize makes its import fail)."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['xgboost'] = None\n")
    result = inferd(
        "serve",
        str(models / "xgb" / "booster.json"),
        "--dialect",
        "runtimes",
        "--model-format",
        "xgboost",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'inferd[xgboost]'" in result.stderr


def test_an_unknown_file_exits_2_naming_it_and_the_formats_looked_for(tmp_path: Path) -> None:
    weights = tmp_path / "weights.h5"
    weights.write_bytes(b"\x89HDF")
    result = inferd("serve", str(weights), "--port", "0")
    assert result.returncode == 2
    assert "weights.h5" in result.stderr and "model.joblib" in result.stderr
    chosen = inferd("serve", str(tmp_path), "--dialect", "runtimes", "--port", "0")
    assert chosen.returncode == 2
    assert str(tmp_path) in chosen.stderr and "looked for model.joblib" in chosen.stderr


def test_an_unreadable_model_bst_names_what_was_tried(tmp_path: Path) -> None:
    (tmp_path / "model.bst").write_bytes(b"neither library's model")
    result = inferd("serve", str(tmp_path / "model.bst"), "--port", "0", "--grpc-port", "0")
    assert result.returncode == 1, result.stderr
    assert "as XGBoost:" in result.stderr and "as LightGBM:" in result.stderr


def test_an_mlserver_uri_leaving_its_model_folder_is_refused(tmp_path: Path) -> None:
    """``parameters.uri`` is a target like any other: it must stay in the model folder."""
    write_sklearn(tmp_path / "elsewhere")
    folder = tmp_path / "models" / "iris"
    folder.mkdir(parents=True)
    mlserver(folder, "mlserver_sklearn.SKLearnModel", "../../elsewhere/model.joblib")
    result = inferd("serve", f"--repository={tmp_path / 'models'}", "--port", "0", "--grpc-port", "0")
    assert result.returncode == 1, result.stderr
    assert "model 'iris'" in result.stderr and "model's folder" in " ".join(result.stderr.split())
