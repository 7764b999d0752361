"""TensorFlow SavedModel APIs against a real server: what handlers see, conversion errors, V2, zips."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.dialects.cortex import projects
from tests.dialects.cortex.projects import SETOSA, VIRGINICA
from tests.dialects.cortex.test_startup import serve_fails
from tests.servers import inferd_command, serve


def test_handler_sees_tf_serving_values(tf: httpx.Client) -> None:
    """Flat lists per output, int64 as strings, strings base64: what Cortex read from TF Serving."""
    response = tf.post("/tf/iris", json=SETOSA)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["label"] == "iris-setosa"
    assert body["class_ids"] == ["0"]
    assert base64.b64decode(body["classes"][0]) == b"iris-setosa"
    probabilities = body["probabilities"]
    assert len(probabilities) == 3 and all(isinstance(value, float) for value in probabilities)
    assert sum(probabilities) == pytest.approx(1, abs=1e-5) and probabilities[0] > 0.5


def test_highest_version_serves(tf: httpx.Client) -> None:
    """Version 1 has negated weights; only version 2 labels both samples right."""
    assert tf.post("/tf/iris", json=VIRGINICA).json()["label"] == "iris-virginica"
    assert tf.post("/tf/iris", json=SETOSA).json()["label"] == "iris-setosa"


def test_zip_with_signature_key(tf: httpx.Client) -> None:
    response = tf.post("/tf/zipped", json=VIRGINICA)
    assert response.status_code == 200, response.text
    assert response.json()["label"] == "iris-virginica"


def test_two_inputs_without_handler(tf: httpx.Client) -> None:
    response = tf.post("/tf/pair", json={"a": [1, 2, 3], "b": [0.5, 0.25, 0]})
    assert response.status_code == 200, response.text
    assert response.content == b'{"count":["3"],"sum":[1.5,2.25,3.0]}\n'


def test_handler_gets_whole_signature_map_and_metadata(tf: httpx.Client) -> None:
    response = tf.post("/described", json={"x": [[5.0, 3.0, 1.0, 0.2]]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["keys"] == ["predict", "serving_default"]
    assert body["input"]["dtype"] == "DT_FLOAT"
    assert body["input"]["tensorShape"] == {"dim": [{"size": "-1"}, {"size": "4"}]}
    assert body["method"] == "tensorflow/serving/predict"
    assert body["note"] == "from-config"


def test_signature_route(tf: httpx.Client) -> None:
    response = tf.get("/tf/iris/signature")
    assert response.status_code == 200, response.text
    assert response.json() == {"signature": {"x": {"shape": [-1, 4], "type": "float32"}}}
    pair = tf.get("/tf/pair/signature").json()["signature"]
    assert pair == {"a": {"shape": [-1], "type": "int32"}, "b": {"shape": [-1], "type": "float32"}}


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        ({"a": [1]}, 'prediction failed: error: missing key "b"'),
        ({"a": [1], "b": [2.0], "c": [3]}, "prediction failed: 'c'"),
        ([[1], [2.0]], 'prediction failed: error: expected sample to be a dictionary with keys "a", "b"'),
        (
            {"a": ["one"], "b": [2.0]},
            'prediction failed: error: key "a": failed to convert to a DT_INT32 tensor',
        ),
    ],
    ids=["missing", "unknown-key", "list", "dtype"],
)
def test_bad_samples_get_406(tf: httpx.Client, sample: object, message: str) -> None:
    response = tf.post("/tf/pair", json=sample)
    assert response.status_code == 406
    assert response.text.startswith(message)
    assert tf.post("/tf/pair", json={"a": [1], "b": [1.0]}).status_code == 200


@pytest.mark.parametrize(
    ("sample", "answer"),
    [
        ({"a": 5, "b": 1}, b'{"count":["1"],"sum":[6.0]}\n'),
        ({"a": [[1, 2]], "b": [0.5, 0.5]}, b'{"count":["2"],"sum":[1.5,2.5]}\n'),
    ],
    ids=["scalars", "rank-2"],
)
def test_shapes_are_left_to_the_graph(tf: httpx.Client, sample: object, answer: bytes) -> None:
    """As behind TF Serving, nothing checks a tensor against the signature's ``[-1]``: scalars stay
    scalar tensors (``make_tensor_proto`` without a shape), still converted to int32 and float32, and
    the graph broadcasts them."""
    response = tf.post("/tf/pair", json=sample)
    assert response.status_code == 200, response.text
    assert response.content == answer


def test_shape_the_graph_refuses_is_406(tf: httpx.Client) -> None:
    """A flat row for ``x: [-1, 4]`` reaches the model, whose matmul needs rank 2."""
    response = tf.post("/described", json={"x": [5.0, 3.0, 1.0, 0.2]})
    assert response.status_code == 406
    assert response.text.startswith("prediction failed: ")
    assert "expected shape" not in response.text
    assert tf.post("/described", json={"x": [[5.0, 3.0, 1.0, 0.2]]}).status_code == 200


def test_model_failure_is_406_and_server_keeps_serving(tf: httpx.Client) -> None:
    """Different lengths pass conversion but fail inside the graph."""
    response = tf.post("/tf/pair", json={"a": [1, 2], "b": [1.0, 2.0, 3.0]})
    assert response.status_code == 406
    assert response.text.startswith("prediction failed: ")
    assert tf.post("/tf/iris", json=SETOSA).status_code == 200


def test_v2_runs_the_raw_signature(tf: httpx.Client) -> None:
    metadata = tf.get("/v2/models/pair").json()
    assert metadata["platform"] == "tensorflow_savedmodel"
    assert {tensor["name"]: tensor["datatype"] for tensor in metadata["inputs"]} == {
        "a": "INT32",
        "b": "FP32",
    }
    request = {
        "inputs": [
            {"name": "a", "shape": [2], "datatype": "INT32", "data": [1, 2]},
            {"name": "b", "shape": [2], "datatype": "FP32", "data": [0.5, 0.5]},
        ]
    }
    response = tf.post("/v2/models/pair/infer", json=request)
    assert response.status_code == 200, response.text
    outputs = {output["name"]: output for output in response.json()["outputs"]}
    assert outputs["sum"]["data"] == [1.5, 2.5]
    assert (outputs["count"]["datatype"], outputs["count"]["data"]) == ("INT64", [2])


def test_unknown_signature_key_stops_startup(projects_root: Path, tf_models_dir: Path) -> None:
    folder = projects.write(projects_root / "tf-unknown-signature", projects.TF_UNKNOWN_SIGNATURE)
    (folder / "models").symlink_to(tf_models_dir)
    command = inferd_command("serve", str(folder), "--port", "0", "--grpc-port", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "signature 'classify' not found; the model has: predict, serving_default" in done.stderr


def test_folder_without_saved_model_exits_2(projects_root: Path, tf_models_dir: Path) -> None:
    folder = projects.write(projects_root / "tf-no-model", projects.TF_NO_SAVED_MODEL)
    message = serve_fails(folder)
    assert "error: api tf: model" in message
    assert "no saved_model.pb in it or in a numeric version directory" in message


def test_zip_extraction_is_removed_on_shutdown(projects_root: Path, tf_project: Path, tmp_path: Path) -> None:
    config = "- kind: api\n  name: zipped\n  tensorflow:\n    model: iris.zip\n"
    folder = projects.write(projects_root / "tf-zip", {"cortex.yaml": config})
    (folder / "iris.zip").symlink_to(tf_project / "models" / "iris.zip")
    with serve(str(folder), "--no-grpc", env={"TMPDIR": str(tmp_path)}) as server:
        extracted = list(tmp_path.glob("inferd-savedmodel-*"))
        assert len(extracted) == 1 and any(extracted[0].rglob("saved_model.pb"))
        sample = {"x": [[6.7, 3.0, 5.2, 2.3]]}
        answer = httpx.post(f"{server.http_url}/zipped", json=sample, timeout=30).json()
        assert answer["class_ids"] == ["2"]
    assert not extracted[0].exists()


#: A 0.25-style TensorFlowPredictor class over the SavedModel (``model_path`` and ``signature_key``).
TF_PREDICTOR = {
    "cortex.yaml": """
        - name: iris-tf
          kind: RealtimeAPI
          predictor:
            type: tensorflow
            path: predictor.py
            model_path: models/iris
            signature_key: predict
            config:
              labels: [setosa, versicolor, virginica]
    """,
    "predictor.py": """
        class TensorFlowPredictor:
            def __init__(self, tensorflow_client, config):
                self.client = tensorflow_client
                self.labels = config["labels"]

            def predict(self, payload):
                prediction = self.client.predict({"x": [list(payload.values())]})
                return {"label": self.labels[int(prediction["class_ids"][0])], "raw": prediction["class_ids"]}
    """,
}


def test_tensorflow_predictor_class(projects_root: Path, tf_models_dir: Path) -> None:
    """The client answers as TF Serving did behind Cortex 0.2x (int64 as strings); the summary route
    shows the signature."""
    folder = projects.write(projects_root / "tf-predictor-class", TF_PREDICTOR)
    (folder / "models").symlink_to(tf_models_dir)
    with serve(str(folder), "--no-grpc") as server, server.http() as http:
        answer = http.post("/iris-tf", json=VIRGINICA)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"label": "virginica", "raw": ["2"]}
        assert http.post("/iris-tf", json=SETOSA).json()["label"] == "setosa"
        assert http.get("/iris-tf").json()["model_signatures"]["x"]["shape"] == [-1, 4]
