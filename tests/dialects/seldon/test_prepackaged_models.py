"""Seldon's TENSORFLOW_SERVER, MLFLOW_SERVER and TRITON_SERVER (ONNX) as graph nodes (refused
before): a SeldonDeployment served by a real ``inferd serve``, the node's ``modelUri`` a SavedModel
in TF Serving's layout (the Cortex tests' iris, built in a subprocess), an MLflow folder (written
here as mlflow.sklearn writes it) or a Triton repository (ONNX via skl2onnx), called with Seldon's
protocol."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np

from tests.dialects.cortex.conftest import tf_models_dir  # noqa: F401  (a fixture)
from tests.dialects.runtimes.test_mlflow import write_mlflow_sklearn
from tests.dialects.runtimes.test_triton import triton_repository
from tests.models.sklearn_folder import ROWS
from tests.servers import inferd_command, serve


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


def test_triton_server_runs_an_onnx_model_of_a_triton_repository(tmp_path: Path) -> None:
    triton_repository(tmp_path / "repository", None)
    chosen = "parameters: [{name: model_name, value: tree, type: STRING}]"
    (tmp_path / "sdep.yaml").write_text(deployment("TRITON_SERVER", tmp_path / "repository", chosen))
    with serve(str(tmp_path / "sdep.yaml")) as server, server.http() as http:
        answer = http.post("/api/v1.0/predictions", json={"data": {"ndarray": ROWS}})
        assert answer.status_code == 200, answer.text
        # config.pbtxt declares the one output, probabilities
        assert np.argmax(answer.json()["data"]["ndarray"], axis=1).tolist() == [0, 2]
        bad = http.post("/api/v1.0/predictions", json={"data": {"ndarray": [[1.0, 2.0]]}})
        assert 400 <= bad.status_code < 500 and "TRITON_SERVER" in bad.text, bad.text
    (tmp_path / "sdep.yaml").write_text(deployment("TRITON_SERVER", tmp_path / "repository"))
    command = inferd_command("serve", str(tmp_path / "sdep.yaml"), "--port", "0", "--grpc-port", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "holds the models ['bare', 'tree']; name one with the model_name parameter" in done.stderr
