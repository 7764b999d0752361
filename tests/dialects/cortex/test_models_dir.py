"""Cortex 0.20+ ``models: dir:``: a folder whose subfolders are the API's models, named after them,
with their versions as numbered subfolders (the highest is the latest), for the ONNX and Python
predictors, served by a real ``inferd serve`` and picked with ``predict(..., model_name=...)`` and
``get_model(model_name)``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dialects.cortex import projects, projects_classes
from tests.dialects.cortex.projects import VIRGINICA
from tests.servers import RunningServer, inferd_command, serve

#: 0.25 layout: two APIs with ``models: dir:``; files beside the model folders are not models.
PROJECT = {
    "cortex.yaml": """
        - name: onnx-dir
          kind: RealtimeAPI
          predictor:
            type: onnx
            path: onnx_predictor.py
            models:
              dir: onnx-models
        - name: python-dir
          kind: RealtimeAPI
          predictor:
            type: python
            path: python_predictor.py
            models:
              dir: file://pickles
              cache_size: 2
    """,
    "onnx_predictor.py": """
        class ONNXPredictor:
            def __init__(self, onnx_client, config):
                self.client = onnx_client

            def predict(self, payload, query_params):
                name = query_params.get("model")
                labels, _ = self.client.predict([payload["row"]], model_name=name)
                return {"model": name, "label": int(labels[0])}
    """,
    "python_predictor.py": """
        import os
        import pickle


        class PythonPredictor:
            def __init__(self, config, python_client):
                self.client = python_client

            def load_model(self, model_path):
                with open(os.path.join(model_path, "model.pkl"), "rb") as file:
                    return pickle.load(file), os.path.basename(model_path)

            def predict(self, payload, query_params):
                name = query_params.get("model")
                model, version = self.client.get_model(model_name=name)
                return {"model": name, "version": version, "label": int(model.predict([payload["row"]])[0])}
    """,
    "onnx-models/README.txt": "not a model\n",
    "pickles/second/1/model.pkl": "an older version: never read\n",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("cortex-models-dir")
    projects.iris_onnx(root / "iris.onnx")
    projects_classes.iris_pickle(root / "model.pkl")
    folder = projects.write(root / "project", PROJECT)
    for relative, built in {
        "onnx-models/flat/model.onnx": "iris.onnx",
        "onnx-models/versioned/1/model.onnx": "iris.onnx",
        "onnx-models/versioned/12/model.onnx": "iris.onnx",
        "pickles/first/model.pkl": "model.pkl",
        "pickles/second/3/model.pkl": "model.pkl",
    }.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / built, folder / relative)
    with serve(str(folder), "--no-grpc") as running:
        yield running


def test_onnx_models_dir_serves_each_subfolder_by_name(server: RunningServer) -> None:
    row = list(VIRGINICA.values())
    with server.http() as http:
        for name in ("flat", "versioned"):
            answer = http.post(f"/onnx-dir?model={name}", json={"row": row})
            assert answer.json() == {"model": name, "label": 2}, answer.text
        assert set(http.get("/onnx-dir").json()["model_signatures"]) == {"flat", "versioned"}
        assert http.post("/onnx-dir?model=README.txt", json={"row": row}).status_code == 500
    said = "'README.txt' model wasn't found in the list of available models"
    assert said in server.wait_for_log(said)


def test_python_models_dir_loads_the_latest_version_of_each(server: RunningServer) -> None:
    row = list(VIRGINICA.values())
    with server.http() as http:
        first = http.post("/python-dir?model=first", json={"row": row})
        assert first.json() == {"model": "first", "version": "first", "label": 2}, first.text
        second = http.post("/python-dir?model=second", json={"row": row})
        assert second.json() == {"model": "second", "version": "3", "label": 2}, second.text


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ("dir: missing", "api x: predictor: models: dir: missing: no such folder"),
        ("dir: s3://bucket/models", "api x: predictor: models: dir: s3://bucket/models: a folder in object"),
        ("dir: empty", "api x: predictor: models: dir: empty: holds no model folder"),
    ],
)
def test_a_models_dir_that_is_not_a_folder_of_models_exits_2(
    tmp_path: Path, models: str, message: str
) -> None:
    files = {
        "cortex.yaml": f"- name: x\n  kind: RealtimeAPI\n  predictor:\n    type: onnx\n    path: p.py\n"
        f"    models:\n      {models}\n",
        "p.py": "class ONNXPredictor:\n    def __init__(self, onnx_client, config):\n        pass\n",
        "empty/file.txt": "",
    }
    folder = projects.write(tmp_path / "bad", files)
    done = subprocess.run(
        inferd_command("serve", str(folder), "--port", "0", "--no-grpc"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert message in " ".join(done.stderr.split())
