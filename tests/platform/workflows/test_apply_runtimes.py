"""``inferd apply`` of a KServe InferenceService naming a model file's format (``modelFormat.name``,
or a framework block) whose ``storageUri`` is a folder holding the file: served by inferd's
model-file runtimes, called over KServe's V1 protocol and V2 through the gateway."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest

from inferd.platform.workflows.layout import WorkflowError
from inferd.platform.workflows.manifests import manifest_layout
from tests.dialects.runtimes.test_mlflow import write_mlflow_sklearn
from tests.dialects.runtimes.test_triton import triton_repository
from tests.models.sklearn_folder import ROWS, sklearn_model_folder
from tests.platform.test_control import Control
from tests.platform.workflows.conftest import verb

SKLEARN = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: iris}
spec:
  predictor:
    model:
      modelFormat: {name: sklearn}
      protocolVersion: v1
      storageUri: ./iris
"""


def test_an_inference_service_of_a_model_file_answers_v1_and_v2(platform: Control, tmp_path: Path) -> None:
    classifier = sklearn_model_folder(tmp_path / "iris")
    path = tmp_path / "isvc.yaml"
    path.write_text(SKLEARN)
    applied = verb(platform, "apply", str(path))
    assert applied.returncode == 0, applied.stderr
    with httpx.Client(base_url=f"{platform.gateway}/e/iris", timeout=30) as http:
        v1 = http.post("/v1/models/iris:predict", json={"instances": ROWS})
        assert v1.status_code == 200, v1.text
        assert v1.json() == {"predictions": classifier.predict(ROWS).tolist()}
        body = {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP64", "data": ROWS}]}
        v2 = http.post("/v2/models/iris/infer", json={**body, "parameters": {"method": "predict_proba"}})
        assert v2.status_code == 200, v2.text
        probabilities = np.reshape(v2.json()["outputs"][0]["data"], (2, 3))
        np.testing.assert_allclose(probabilities, classifier.predict_proba(ROWS))
    assert verb(platform, "delete", "iris").returncode == 0


def test_the_format_a_predictor_names_is_given_to_its_service(tmp_path: Path) -> None:
    (tmp_path / "booster").mkdir()
    path = tmp_path / "isvc.yaml"
    path.write_text(
        "kind: InferenceService\nmetadata: {name: b}\nspec: {predictor: {xgboost: {storageUri: ./booster}}}\n"
    )
    part = manifest_layout(path).routes[0][0]
    assert part.environment == {"INFERD_MODEL_FORMAT": "xgboost"}  # type: ignore[union-attr]
    path.write_text(
        "kind: InferenceService\nmetadata: {name: b}\n"
        "spec: {predictor: {model: {modelFormat: {name: inferd}, storageUri: ./booster}}}\n"
    )
    assert manifest_layout(path).routes[0][0].environment == {}  # type: ignore[union-attr]


TRITON = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: trees}
spec:
  predictor:
    model:
      modelFormat: {name: triton}
      protocolVersion: v2
      storageUri: ./triton
"""
MLFLOW = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: flow}
spec:
  predictor:
    model:
      modelFormat: {name: mlflow}
      protocolVersion: v2
      storageUri: ./flow
"""


def test_triton_and_mlflow_inference_services_are_served(platform: Control, tmp_path: Path) -> None:
    """A ``triton`` storageUri is a Triton model repository (ONNX here); an ``mlflow`` one an MLmodel
    folder: both served by the model-file runtimes, called over V2 and V1 through the gateway."""
    triton_repository(tmp_path / "triton", None)
    estimator = write_mlflow_sklearn(tmp_path / "flow")
    for name, text in (("trees", TRITON), ("flow", MLFLOW)):
        (tmp_path / f"{name}.yaml").write_text(text)
        applied = verb(platform, "apply", str(tmp_path / f"{name}.yaml"))
        assert applied.returncode == 0, applied.stderr
    with httpx.Client(base_url=platform.gateway, timeout=30) as http:
        body = {"inputs": [{"name": "X", "shape": [2, 4], "datatype": "FP32", "data": ROWS}]}
        v2 = http.post("/e/trees/v2/models/classifier/infer", json=body)
        assert v2.status_code == 200, v2.text
        assert np.argmax(np.reshape(v2.json()["outputs"][0]["data"], (2, 3)), axis=1).tolist() == [0, 2]
        v1 = http.post("/e/flow/v1/models/flow:predict", json={"instances": ROWS})
        assert v1.status_code == 200, v1.text
        assert v1.json() == {"predictions": estimator.predict(np.array(ROWS)).tolist()}
    for name in ("trees", "flow"):
        assert verb(platform, "delete", name).returncode == 0


def test_tensorflow_and_mlflow_formats_are_given_and_pmml_is_refused_saying_why(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    path = tmp_path / "isvc.yaml"
    head = "kind: InferenceService\nmetadata: {name: m}\nspec: {predictor: "
    blocks = {
        "tensorflow": "{tensorflow: {storageUri: ./model}}}",  # the old framework key
        "mlflow": "{model: {modelFormat: {name: mlflow}, storageUri: ./model}}}",
    }
    for expected, block in blocks.items():
        path.write_text(head + block + "\n")
        part = manifest_layout(path).routes[0][0]
        assert part.environment == {"INFERD_MODEL_FORMAT": expected}  # type: ignore[union-attr]
    path.write_text(
        "kind: InferenceService\nmetadata: {name: m}\n"
        "spec: {predictor: {model: {modelFormat: {name: pmml}, storageUri: ./model}}}\n"
    )
    with pytest.raises(WorkflowError, match="inferd has no PMML runtime: the maintained PMML evaluators"):
        manifest_layout(path)
    path.write_text(
        "kind: InferenceService\nmetadata: {name: m}\nspec: {predictor: {pmml: {storageUri: ./model}}}\n"
    )
    with pytest.raises(WorkflowError, match="the predictor's model is pmml"):
        manifest_layout(path)


def test_a_seldon_deployment_of_an_mlflow_server_is_served(platform: Control, tmp_path: Path) -> None:
    estimator = write_mlflow_sklearn(tmp_path / "flow")
    path = tmp_path / "sdep.yaml"
    path.write_text(
        "kind: SeldonDeployment\nmetadata: {name: sflow}\nspec:\n  predictors:\n  - name: default\n"
        "    graph: {name: clf, implementation: MLFLOW_SERVER, modelUri: ./flow}\n"
    )
    applied = verb(platform, "apply", str(path))
    assert applied.returncode == 0, applied.stderr
    with httpx.Client(base_url=platform.gateway, timeout=30) as http:
        answer = http.post("/e/sflow/api/v1.0/predictions", json={"data": {"ndarray": ROWS}})
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"]["ndarray"] == estimator.predict(np.array(ROWS)).tolist()
    assert verb(platform, "delete", "sflow").returncode == 0
