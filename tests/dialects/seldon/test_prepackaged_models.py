"""Seldon's TENSORFLOW_SERVER and MLFLOW_SERVER as graph nodes (refused before): a SeldonDeployment
served by a real ``inferd serve``, the node's ``modelUri`` a SavedModel in TF Serving's layout (the
Cortex tests' iris, built in a subprocess) or an MLflow folder (written here as mlflow.sklearn
writes it), called with Seldon's protocol."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np

from tests.dialects.cortex.conftest import tf_models_dir  # noqa: F401  (a fixture)
from tests.dialects.runtimes.test_mlflow import write_mlflow_sklearn
from tests.models.sklearn_folder import ROWS
from tests.servers import serve


def deployment(implementation: str, uri: Path, parameters: str = "") -> str:
    return textwrap.dedent(f"""
        apiVersion: machinelearning.seldon.io/v1
        kind: SeldonDeployment
        metadata: {{name: model}}
        spec:
          predictors:
          - name: default
            graph:
              name: classifier
              implementation: {implementation}
              modelUri: {uri}
              {parameters}
    """)


def test_tensorflow_server_answers_the_signatures_output(tmp_path: Path, tf_models_dir: Path) -> None:  # noqa: F811
    shutil.copytree(tf_models_dir / "iris", tmp_path / "iris")
    chosen = (
        "parameters: [{name: signature_name, value: predict, type: STRING},"
        " {name: model_output, value: probabilities, type: STRING}]"
    )
    (tmp_path / "sdep.yaml").write_text(deployment("TENSORFLOW_SERVER", tmp_path / "iris", chosen))
    with serve(str(tmp_path / "sdep.yaml")) as server, server.http() as http:
        answer = http.post("/api/v1.0/predictions", json={"data": {"ndarray": ROWS}})
        assert answer.status_code == 200, answer.text
        probabilities = answer.json()["data"]["ndarray"]
        assert np.argmax(probabilities, axis=1).tolist() == [0, 2]  # version 2, the highest, served
        bad = http.post("/api/v1.0/predictions", json={"data": {"ndarray": [[1.0, 2.0]]}})
        assert 400 <= bad.status_code < 500 and "TENSORFLOW_SERVER" in bad.text
        assert http.post("/api/v1.0/predictions", json={"data": {"ndarray": ROWS}}).status_code == 200


def test_mlflow_server_answers_the_models_predict(tmp_path: Path) -> None:
    estimator = write_mlflow_sklearn(tmp_path / "flow")
    (tmp_path / "sdep.yaml").write_text(deployment("MLFLOW_SERVER", tmp_path / "flow"))
    with serve(str(tmp_path / "sdep.yaml")) as server, server.http() as http:
        answer = http.post(
            "/api/v1.0/predictions", json={"data": {"names": ["a", "b", "c", "d"], "ndarray": ROWS}}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"]["ndarray"] == estimator.predict(np.array(ROWS)).tolist()
        assert "is listed, not installed" in server.log
