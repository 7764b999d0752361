"""Seldon's SKLEARN_SERVER served as seldon-core serves its image, ``SKLearnServer`` with the model's
folder as ``model_uri``: here as ``inferd serve inferd.dialects.seldon.prepackaged.SKLearnServer
--dialect seldon``, answering with the estimator's method, its columns named ``t:N``, its folder's
``metadata.yaml`` as its metadata. (Through a graph and ``inferd apply``: tests/platform/workflows.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.models.sklearn_folder import ROWS, sklearn_model_folder
from tests.servers import inferd_command, serve

TARGET = "inferd.dialects.seldon.prepackaged.SKLearnServer"


def parameters(**values: str) -> str:
    return json.dumps([{"name": key, "value": value, "type": "STRING"} for key, value in values.items()])


def test_sklearn_server_answers_with_the_method_it_is_given(tmp_path: Path) -> None:
    classifier = sklearn_model_folder(tmp_path / "iris")
    (tmp_path / "iris" / "metadata.yaml").write_text("name: iris\nversions: [v1]\n")
    chosen = parameters(model_uri=str(tmp_path / "iris"), method="decision_function")
    with serve(TARGET, "--dialect", "seldon", "--parameters", chosen) as server, server.http() as http:
        answer = http.post("/api/v1.0/predictions", json={"data": {"ndarray": ROWS}})
        assert answer.status_code == 200, answer.text
        data = answer.json()["data"]
        assert data["names"] == ["t:0", "t:1", "t:2"]
        np.testing.assert_allclose(data["ndarray"], classifier.decision_function(ROWS))
        metadata = http.get("/metadata").json()
        assert metadata["name"] == "iris" and metadata["versions"] == ["v1"]


@pytest.mark.parametrize(
    ("given", "problem"),
    [({}, "needs the model_uri parameter"), ({"model_uri": "/nowhere/iris"}, "no model.joblib in /nowhere")],
)
def test_sklearn_server_without_its_model_fails_to_start(given: dict[str, str], problem: str) -> None:
    command = inferd_command("serve", TARGET, "--dialect", "seldon", "--parameters", parameters(**given))
    done = subprocess.run(
        [*command, "--port", "0", "--grpc-port", "0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and problem in done.stderr, done.stderr


def write_booster(library: str, folder: Path) -> Any:
    """``folder/model.bst``: a Booster of ``library`` fitted on iris; returns the Booster."""
    from sklearn.datasets import load_iris

    features, labels = load_iris(return_X_y=True)
    folder.mkdir(parents=True, exist_ok=True)
    if library == "xgboost":
        import xgboost

        with xgboost.config_context(verbosity=0):  # model.bst: it warns that it writes UBJSON
            booster = xgboost.train(
                {"objective": "multi:softprob", "num_class": 3, "nthread": 1},
                xgboost.DMatrix(features, label=labels),
                num_boost_round=3,
            )
            booster.save_model(str(folder / "model.bst"))
        return booster
    else:
        import lightgbm

        booster = lightgbm.train(
            {"objective": "multiclass", "num_class": 3, "verbose": -1, "num_threads": 1},
            lightgbm.Dataset(features, label=labels),
            num_boost_round=3,
        )
    booster.save_model(str(folder / "model.bst"))
    return booster


@pytest.mark.parametrize(
    ("implementation", "library"), [("XGBOOST_SERVER", "xgboost"), ("LIGHTGBM_SERVER", "lightgbm")]
)
def test_booster_servers_of_a_graph_answer_what_the_booster_predicts(
    tmp_path: Path, implementation: str, library: str
) -> None:
    """A SeldonDeployment node naming XGBOOST_SERVER or LIGHTGBM_SERVER (refused before) runs
    inferd's class of Seldon's, on the folder's ``model.bst``."""
    booster = write_booster(library, tmp_path / "model")
    graph = tmp_path / "graph.yaml"
    graph.write_text(
        f"graph: {{name: clf, implementation: {implementation}, modelUri: {tmp_path / 'model'}}}\n"
    )
    with serve(str(graph)) as server, server.http() as http:
        answer = http.post("/api/v1.0/predictions", json={"data": {"ndarray": ROWS}})
        assert answer.status_code == 200, answer.text
        if library == "xgboost":
            import xgboost

            with xgboost.config_context(verbosity=0):  # its log callback warns in this process
                expected = booster.predict(xgboost.DMatrix(np.array(ROWS)))
        else:
            expected = booster.predict(np.array(ROWS))
        np.testing.assert_allclose(answer.json()["data"]["ndarray"], expected, rtol=1e-5)
