"""Triton's model repository layout served by ``inferd serve --repository``: ``<model>/config.pbtxt``
naming ONNX Runtime or a TensorFlow SavedModel, the model in version folders (``1/model.onnx``,
``1/model.savedmodel/``), inputs and outputs from the config. Models built here (skl2onnx, and the
Cortex tests' SavedModel built in a subprocess); one server for the module (TensorFlow's import is
slow), called with tritonclient (HTTP and gRPC) and over KServe's V1."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import descriptor_pb2
from tritonclient.grpc import model_config_pb2

from inferd.dialects.frameworks import triton
from tests.dialects.cortex.conftest import tf_models_dir  # noqa: F401  (a fixture)
from tests.dialects.runtimes.conftest import ROWS, write_onnx
from tests.servers import RunningServer, inferd_command, serve

ONNX_CONFIG = """
name: "classifier"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "X", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "probabilities", data_type: TYPE_FP32, dims: [ 3 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 100 }
"""
BACKEND_CONFIG = """
backend: "onnxruntime"
default_model_filename: "tree.onnx"
version_policy: { all { } }
"""
SAVEDMODEL_CONFIG = """
platform: "tensorflow_savedmodel"
max_batch_size: 16
input [ { name: "x", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [
  { name: "class_ids", data_type: TYPE_INT64, dims: [ 1 ] },
  { name: "classes", data_type: TYPE_STRING, dims: [ 1 ] }
]
"""


def triton_repository(root: Path, tf_models: Path | None) -> Path:
    """``tree`` (platform onnxruntime_onnx, named ``classifier``), ``bare`` (backend onnxruntime, its
    file named by default_model_filename, two versions served), ``iris`` (a SavedModel)."""
    write_onnx(root / "tree" / "1" / "model.onnx")
    (root / "tree" / "config.pbtxt").write_text(ONNX_CONFIG)
    for version in ("1", "2"):
        write_onnx(root / "bare" / version / "tree.onnx")
    (root / "bare" / "config.pbtxt").write_text(BACKEND_CONFIG)
    if tf_models is not None:
        shutil.copytree(tf_models / "iris" / "2", root / "iris" / "1" / "model.savedmodel")
        (root / "iris" / "config.pbtxt").write_text(SAVEDMODEL_CONFIG)
    return root


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, tf_models_dir: Path) -> Iterator[RunningServer]:  # noqa: F811
    root = triton_repository(tmp_path_factory.mktemp("triton"), tf_models_dir)
    with serve(f"--repository={root}") as server:
        yield server


def test_the_schema_shipped_is_tritons_model_config() -> None:
    ours = descriptor_pb2.FileDescriptorProto()
    ours.ParseFromString((Path(triton.__file__).parent / triton.SCHEMA_FILE).read_bytes())
    theirs = descriptor_pb2.FileDescriptorProto()
    model_config_pb2.DESCRIPTOR.CopyToProto(theirs)
    assert ours == theirs


def test_a_triton_repository_is_served_with_the_configs_inputs_and_outputs(repository: RunningServer) -> None:
    assert sorted(repository.models) == ["bare", "classifier", "iris"]
    with repository.http() as http:
        metadata = http.get("/v2/models/classifier").json()
        assert metadata["platform"] == "onnx_onnxv1" and metadata["versions"] == ["1"]
        assert metadata["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 4]}]
        assert metadata["outputs"] == [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 3]}]
        predictions = http.post("/v1/models/classifier:predict", json={"instances": ROWS}).json()
        assert np.argmax(predictions["predictions"], axis=1).tolist() == [0, 2]  # the declared output alone
        # no inputs declared: the model's own; version_policy all: both versions served
        bare = http.get("/v2/models/bare/versions/1").json()
        assert bare["versions"] == ["1"] and bare["inputs"][0]["name"] == "X"
        assert http.post("/v1/models/bare/versions/1:predict", json={"instances": ROWS}).status_code == 200
        iris = http.get("/v2/models/iris").json()
        assert iris["platform"] == "tensorflow_savedmodel"
        assert [output["name"] for output in iris["outputs"]] == ["class_ids", "classes"]
        rows = http.post("/v1/models/iris:predict", json={"instances": ROWS}).json()["predictions"]
        assert rows == [
            {"class_ids": [0], "classes": ["iris-setosa"]},
            {"class_ids": [2], "classes": ["iris-virginica"]},
        ]
        wrong = http.post("/v1/models/classifier:predict", json={"instances": [[1.0, 2.0]]})
        assert wrong.status_code == 400 and "the model expects [-1, 4]" in wrong.json()["error"]
        assert http.post("/v1/models/classifier:predict", json={"instances": ROWS}).status_code == 200


def test_tritonclient_calls_a_triton_repository_over_http_and_grpc(repository: RunningServer) -> None:
    data = np.array(ROWS, dtype=np.float32)
    client = httpclient.InferenceServerClient(repository.http_address)
    try:
        tensor = httpclient.InferInput("x", list(data.shape), "FP32")
        tensor.set_data_from_numpy(data)
        result = client.infer("iris", [tensor], outputs=[httpclient.InferRequestedOutput("classes")])
        assert result.as_numpy("classes").reshape(-1).tolist() == [b"iris-setosa", b"iris-virginica"]
    finally:
        client.close()
    assert repository.grpc_address is not None
    grpc = grpcclient.InferenceServerClient(repository.grpc_address)
    try:
        tensor = grpcclient.InferInput("X", list(data.shape), "FP32")
        tensor.set_data_from_numpy(data)
        probabilities = grpc.infer("classifier", [tensor]).as_numpy("probabilities")
        assert probabilities.shape == (2, 3) and probabilities.argmax(axis=1).tolist() == [0, 2]
    finally:
        grpc.close()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ('platform: "pytorch_libtorch"', "platform 'pytorch_libtorch' is a Triton backend inferd cannot run"),
        ('platform: "onnxruntime_onnx"\nmax_batch: 3', "config.pbtxt is not Triton's model configuration"),
        (
            'platform: "onnxruntime_onnx"\ninput [ { name: "Y", data_type: TYPE_FP32, dims: [4] } ]',
            "declares the input 'Y', which",
        ),
        (
            'platform: "onnxruntime_onnx"\ninput [ { name: "X", data_type: TYPE_FP64, dims: [4] } ]',
            "declares the input 'X' as FP64",
        ),
    ],
)
def test_a_config_inferd_cannot_serve_stops_start_up_naming_why(
    tmp_path: Path, config: str, expected: str
) -> None:
    write_onnx(tmp_path / "models" / "m" / "1" / "model.onnx")
    (tmp_path / "models" / "m" / "config.pbtxt").write_text(config)
    command = inferd_command(
        "serve", f"--repository={tmp_path / 'models'}", "--port", "0", "--grpc-port", "0"
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert expected in " ".join(done.stderr.split())
