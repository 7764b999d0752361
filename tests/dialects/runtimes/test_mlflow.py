"""MLflow models served with no code: an MLmodel folder of the pyfunc flavour written here as
``mlflow.sklearn.save_model`` writes it (cloudpickle'd estimator, MLmodel with a column-based
signature, conda.yaml, python_env.yaml, requirements.txt; written by hand: MLflow's pyfunc needs
pandas, which this environment lacks), served by a real ``inferd serve FOLDER``, called over V2 and
KServe's V1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pytest
import yaml
from sklearn.linear_model import LogisticRegression

from tests.dialects.runtimes.conftest import ROWS, iris
from tests.dialects.runtimes.test_runtimes import inferd
from tests.servers import RunningServer, serve

COLUMNS = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]


def write_mlflow_sklearn(folder: Path) -> Any:
    """What ``mlflow.sklearn.save_model(estimator, folder, signature=...)`` writes (MLflow 2.x)."""
    features, labels = iris()
    estimator = LogisticRegression(max_iter=300).fit(features, labels)
    folder.mkdir(parents=True)
    (folder / "model.pkl").write_bytes(cloudpickle.dumps(estimator))
    inputs = [{"type": "double", "name": name, "required": True} for name in COLUMNS]
    mlmodel = {
        "flavors": {
            "python_function": {
                "env": {"conda": "conda.yaml", "virtualenv": "python_env.yaml"},
                "loader_module": "mlflow.sklearn",
                "model_path": "model.pkl",
                "predict_fn": "predict",
                "python_version": "3.11.9",
            },
            "sklearn": {
                "code": None,
                "pickled_model": "model.pkl",
                "serialization_format": "cloudpickle",
                "sklearn_version": "1.5.0",
            },
        },
        "mlflow_version": "2.14.1",
        "model_size_bytes": 1000,
        "model_uuid": "0f6c7b0e0b0c4d0e8b7f1c5c2c3a9d11",
        "signature": {
            "inputs": json.dumps(inputs),
            "outputs": json.dumps([{"type": "long", "required": True}]),
            "params": None,
        },
        "utc_time_created": "2024-06-01 12:00:00.000000",
    }
    (folder / "MLmodel").write_text(yaml.safe_dump(mlmodel, sort_keys=False))
    (folder / "conda.yaml").write_text("channels: [conda-forge]\ndependencies: [python=3.11, pip]\n")
    (folder / "python_env.yaml").write_text("python: 3.11.9\nbuild_dependencies: [pip]\n")
    (folder / "requirements.txt").write_text("mlflow==2.14.1\nscikit-learn==1.5.0\n")
    return estimator


@pytest.fixture(scope="module")
def mlflow_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Any]]:
    folder = tmp_path_factory.mktemp("mlflow") / "iris"
    estimator = write_mlflow_sklearn(folder)
    with serve(str(folder)) as server:
        yield server, estimator


def test_an_mlflow_model_answers_v1_and_v2_with_its_signature(
    mlflow_model: tuple[RunningServer, Any],
) -> None:
    server, estimator = mlflow_model
    expected = estimator.predict(np.array(ROWS)).tolist()
    assert server.models == ["iris"]
    with server.http() as http:
        metadata = http.get("/v2/models/iris").json()
        assert metadata["platform"] == "mlflow"
        assert metadata["inputs"] == [{"name": name, "datatype": "FP64", "shape": [-1]} for name in COLUMNS]
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).json() == {
            "predictions": expected
        }
        # TF Serving's row form naming each column, and V2 columns sent in another order: the signature's
        named = [dict(zip(COLUMNS, row, strict=True)) for row in ROWS]
        assert (
            http.post("/v1/models/iris:predict", json={"instances": named}).json()["predictions"] == expected
        )
        columns = [
            {"name": name, "shape": [2], "datatype": "FP64", "data": [row[index] for row in ROWS]}
            for index, name in reversed(list(enumerate(COLUMNS)))
        ]
        answer = http.post("/v2/models/iris/infer", json={"inputs": columns}).json()
        assert answer["outputs"][0]["data"] == expected
        proba = http.post(
            "/v1/models/iris:predict", json={"instances": ROWS, "parameters": {"method": "predict_proba"}}
        ).json()
        np.testing.assert_allclose(proba["predictions"], estimator.predict_proba(np.array(ROWS)))
        bad = http.post("/v1/models/iris:predict", json={"instances": [[1.0, 2.0]]})
        assert bad.status_code == 400 and "takes 4 features per row" in bad.json()["error"]
        assert http.post("/v1/models/iris:predict", json={"instances": ROWS}).status_code == 200
    # the model's environment is listed, not installed
    assert "conda.yaml, python_env.yaml, requirements.txt) is listed, not installed" in server.log


def test_an_mlmodel_without_the_pyfunc_flavour_exits_2_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "spark"
    folder.mkdir()
    (folder / "MLmodel").write_text(yaml.safe_dump({"flavors": {"spark": {"pyspark_version": "3.5"}}}))
    result = inferd("serve", str(folder), "--port", "0", "--grpc-port", "0")
    assert result.returncode == 2, result.stderr
    assert "'python_function' flavour, which this one lacks (it has ['spark'])" in result.stderr


def test_mlserver_settings_naming_mlflow_runtime_serve_the_model_they_point_at(tmp_path: Path) -> None:
    """MLServer's ``mlserver_mlflow.MLflowRuntime`` with ``parameters.uri`` naming the MLflow folder."""
    folder = tmp_path / "repository" / "classifier"
    estimator = write_mlflow_sklearn(folder / "model")
    settings = {"name": "classifier", "implementation": "mlserver_mlflow.MLflowRuntime"}
    settings["parameters"] = {"uri": "./model"}  # type: ignore[assignment]
    (folder / "model-settings.json").write_text(json.dumps(settings))
    with serve(f"--repository={tmp_path / 'repository'}") as server, server.http() as http:
        answer = http.post("/v1/models/classifier:predict", json={"instances": ROWS})
        assert answer.json() == {"predictions": estimator.predict(np.array(ROWS)).tolist()}
