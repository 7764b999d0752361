"""The model of bench/cnn_batching.py: a small ONNX CNN, built here, served as a native inferd model.

``build(path)`` writes the network with ``onnx.helper``, with random weights of a fixed seed: input
``[N, 3, 64, 64]`` FP32, three 3x3 convolutions of stride 2 and padding 1 (3→16→32→64 channels, each
followed by Relu, down to 64x8x8), then a VGG-style classifier head: Flatten, Gemm(4096→2048), Relu,
Gemm(2048→10). With ``hidden=0`` the head is GlobalAveragePool, Flatten, Gemm(64→10) instead.

``Cnn`` serves the file named by the environment variable ``CNN_ONNX`` with onnxruntime on the CPU
with one intra-op and one inter-op thread, so that on a small machine the benchmark measures what
batching gains, not what onnxruntime's own threads do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

import inferd
from inferd import TensorSpec

ENV = "CNN_ONNX"
INPUT, OUTPUT = "input", "logits"
SHAPE = (3, 64, 64)  # of one image
CHANNELS = (16, 32, 64)
HIDDEN = 2048
CLASSES = 10
SEED = 20261123


def build(path: Path, hidden: int = HIDDEN) -> Path:
    """Write the CNN to ``path`` (checked by onnx.checker); ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    nodes: list[Any] = []
    weights: list[Any] = []

    def layer(op: str, name: str, inputs: list[str], w: np.ndarray, b: np.ndarray, **attributes: Any) -> str:
        weights.extend((numpy_helper.from_array(w, f"{name}.w"), numpy_helper.from_array(b, f"{name}.b")))
        nodes.append(helper.make_node(op, [*inputs, f"{name}.w", f"{name}.b"], [name], **attributes))
        return name

    def relu(name: str) -> str:
        nodes.append(helper.make_node("Relu", [name], [f"{name}.relu"]))
        return f"{name}.relu"

    def he(*shape: int) -> np.ndarray:  # He initialisation: activations keep their scale through Relu
        drawn: np.ndarray = rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))
        return drawn.astype(np.float32)

    previous, channels = INPUT, SHAPE[0]
    for index, out in enumerate(CHANNELS):
        bias = (rng.standard_normal(out) * 0.01).astype(np.float32)
        conv = layer(
            "Conv", f"conv{index}", [previous], he(out, channels, 3, 3), bias,
            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
        )  # fmt: skip
        previous, channels = relu(conv), out
    if hidden:
        nodes.append(helper.make_node("Flatten", [previous], ["flat"], axis=1))
        features = channels * (SHAPE[1] // 8) * (SHAPE[2] // 8)
        fc = layer("Gemm", "fc0", ["flat"], he(hidden, features), np.zeros(hidden, np.float32), transB=1)
        previous, channels = relu(fc), hidden
    else:
        nodes.append(helper.make_node("GlobalAveragePool", [previous], ["pool"]))
        nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], axis=1))
        previous = "flat"
    w = (rng.standard_normal((CLASSES, channels)) / np.sqrt(channels)).astype(np.float32)
    nodes.append(helper.make_node("Gemm", [previous, "fc.w", "fc.b"], [OUTPUT], transB=1))
    weights.extend(
        (numpy_helper.from_array(w, "fc.w"), numpy_helper.from_array(np.zeros(CLASSES, np.float32), "fc.b"))
    )

    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["N", *SHAPE])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["N", CLASSES])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by any onnxruntime >= 1.10
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def session(path: str | Path) -> Any:
    """An onnxruntime session on the CPU with one intra-op and one inter-op thread."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


class Cnn(inferd.Model):
    inputs = (TensorSpec(INPUT, "FP32", (-1, *SHAPE)),)
    outputs = (TensorSpec(OUTPUT, "FP32", (-1, CLASSES)),)

    def load(self) -> None:
        self.session = session(os.environ[ENV])

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        (logits,) = self.session.run([OUTPUT], {INPUT: inputs[INPUT]})
        return {OUTPUT: logits}
