"""TensorFlow SavedModels served with no code: the Cortex tests' SavedModels (built in a
subprocess, never downloaded) laid out as TF Serving lays them out (``iris/1``, ``iris/2``), served
by one real ``inferd serve --repository`` (TensorFlow's import is slow: one server for the module),
called over V2 (httpx, tritonclient grpc) and KServe's V1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from tests.dialects.cortex.conftest import tf_models_dir  # noqa: F401  (a fixture)
from tests.dialects.runtimes.conftest import ROWS
from tests.dialects.runtimes.test_runtimes import inferd
from tests.servers import RunningServer, serve

#: The iris SavedModel's classes for ROWS (version 2; version 1 has negated weights and differs).
LABELS = [0, 2]


@pytest.fixture(scope="module")
def tf_repository(tf_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:  # noqa: F811
    root = tmp_path_factory.mktemp("tf-repository")
    shutil.copytree(tf_models_dir / "iris", root / "iris")
    shutil.copytree(tf_models_dir / "pair", root / "pair")
    with serve(f"--repository={root}") as server:
        yield server


def test_a_savedmodel_answers_v2_and_v1_from_its_serving_signature(tf_repository: RunningServer) -> None:
    assert sorted(tf_repository.models) == ["iris", "pair"]
    with tf_repository.http() as http:
        metadata = http.get("/v2/models/iris").json()
        assert metadata["platform"] == "tensorflow_savedmodel" and metadata["versions"] == ["2"]
        assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
        assert [output["name"] for output in metadata["outputs"]] == ["class_ids", "classes", "probabilities"]
        body = {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": ROWS}]}
        answer = http.post("/v2/models/iris/infer", json={**body, "outputs": [{"name": "classes"}]}).json()
        assert answer["outputs"] == [
            {
                "name": "classes",
                "datatype": "BYTES",
                "shape": [2, 1],
                "data": ["iris-setosa", "iris-virginica"],
            }
        ]
        rows = http.post("/v1/models/iris:predict", json={"instances": ROWS}).json()["predictions"]
        assert [row["class_ids"] for row in rows] == [[label] for label in LABELS]
        columnar = http.post("/v1/models/iris:predict", json={"inputs": {"x": ROWS}}).json()["outputs"]
        assert np.argmax(columnar["probabilities"], axis=1).tolist() == LABELS
        # a model of one signature (not serving_default) is served by it: two inputs by name
        pair = http.post("/v1/models/pair:predict", json={"inputs": {"a": [1, 2], "b": [0.5, 0.25]}}).json()
        assert pair["outputs"] == {"sum": [1.5, 2.25], "count": [2]}


def test_tritonclient_calls_a_savedmodel_over_grpc(tf_repository: RunningServer) -> None:
    assert tf_repository.grpc_address is not None
    client = grpcclient.InferenceServerClient(tf_repository.grpc_address)
    try:
        tensor = grpcclient.InferInput("x", [2, 4], "FP32")
        tensor.set_data_from_numpy(np.array(ROWS, dtype=np.float32))
        result = client.infer("iris", [tensor])
        assert result.as_numpy("class_ids").reshape(-1).tolist() == LABELS
        assert client.get_model_metadata("iris").platform == "tensorflow_savedmodel"
    finally:
        client.close()


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/v1/models/iris:predict", {"instances": [[1.0, 2.0]]}, "the model expects [-1, 4]"),
        ("/v1/models/iris:predict", {"instances": [["a", "b", "c", "d"]]}, "could not convert"),
        ("/v1/models/pair:predict", {"inputs": {"a": [1, 2]}}, "missing input(s) ['b']"),
        ("/v1/models/pair:predict", {"inputs": {"a": [1, 2], "b": [1.0, 2.0, 3.0]}}, "Incompatible shapes"),
        (
            "/v2/models/iris/infer",
            {"inputs": [{"name": "y", "shape": [1, 4], "datatype": "FP32", "data": ROWS[0]}]},
            "unknown input 'y'",
        ),
    ],
)
def test_bad_input_is_a_400_with_json_and_the_server_keeps_serving(
    tf_repository: RunningServer, path: str, body: object, fragment: str
) -> None:
    with tf_repository.http() as http:
        answer = http.post(path, json=body)
        assert answer.status_code == 400, answer.text
        assert fragment in answer.json()["error"]
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).status_code == 200


def test_an_unknown_signature_key_exits_1_naming_the_signatures(tf_models_dir: Path) -> None:  # noqa: F811
    result = inferd(
        "serve", str(tf_models_dir / "iris"), "--signature-key", "nope", "--port", "0", "--grpc-port", "0"
    )
    assert result.returncode == 1, result.stderr
    assert "signature 'nope' not found; the model has: predict, serving_default" in result.stderr
