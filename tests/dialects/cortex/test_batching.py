"""Cortex ONNX batching: pre_inference and post_inference run per sample, the ONNX model once over
the stacked samples, and each client gets its own answer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import onnx
from onnx import TensorProto, helper

from tests.dialects.cortex import projects
from tests.servers import serve

CONFIG = """
    - kind: api
      name: counter
      endpoint: /counter
      onnx:
        model: counter.onnx
        request_handler: handler.py
"""
HANDLER = """
    def pre_inference(sample, signature, metadata):
        return {"x": [sample["value"], 1.0]}


    def post_inference(prediction, signature, metadata):
        doubled, batch = prediction
        return {"doubled": float(doubled[0][0]), "batch": int(batch[0][0])}
"""


def counter_onnx(path: Path) -> None:
    """y = 2x, and n: every row holds the number of rows the run had (the batch size)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])
    n = helper.make_tensor_value_info("n", TensorProto.FLOAT, [None, 2])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["y"]),
        helper.make_node("Mul", ["x", "zero"], ["zeros"]),
        helper.make_node("Add", ["zeros", "one"], ["ones"]),
        helper.make_node("ReduceSum", ["ones", "axes"], ["count"], keepdims=1),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Expand", ["count", "shape"], ["n"]),
    ]
    graph = helper.make_graph(nodes, "counter", [x], [y, n], initializer=[two, zero, one, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


def project(folder: Path) -> Path:
    projects.write(folder, {"cortex.yaml": CONFIG, "handler.py": HANDLER})
    counter_onnx(folder / "counter.onnx")
    return folder / "cortex.yaml"


def answers(url: str, count: int) -> list[httpx.Response]:
    def one(value: int) -> httpx.Response:
        return httpx.post(f"{url}/counter", json={"value": value}, timeout=30)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_onnx_runs_once_over_concurrent_samples(tmp_path: Path) -> None:
    args = ("--dialect", "cortex", "--max-batch-size", "16", "--max-batch-time-ms", "100", "--no-grpc")
    with serve(str(project(tmp_path)), *args) as server:
        results = answers(server.http_url, 12)
        assert all(result.status_code == 200 for result in results), [r.text for r in results]
        for value, result in enumerate(results):
            assert result.json()["doubled"] == 2.0 * value
        assert max(result.json()["batch"] for result in results) > 1
        bad = httpx.post(f"{server.http_url}/counter", json={"nothing": 1})
        assert bad.status_code == 406 and "prediction failed" in bad.text


def test_without_batching_each_sample_runs_alone(tmp_path: Path) -> None:
    with serve(str(project(tmp_path)), "--dialect", "cortex", "--no-grpc") as server:
        assert {result.json()["batch"] for result in answers(server.http_url, 8)} == {1}
