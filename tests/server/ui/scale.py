"""A native model declaring its tensors, for the try-it page's V2 form."""

from __future__ import annotations

import numpy as np

import inferd
from inferd import TensorSpec


class Scale(inferd.Model):
    inputs = (TensorSpec("x", "FP32", (-1, 2)),)
    outputs = (TensorSpec("y", "FP32", (-1, 2)),)

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": inputs["x"] * 10}
