"""A native inferd model: adds ten."""

import numpy as np

import inferd
from inferd import TensorSpec


class AddTen(inferd.Model):
    inputs = (TensorSpec("x", "FP64", (-1, -1)),)
    outputs = (TensorSpec("y", "FP64", (-1, -1)),)

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": inputs["x"] + 10}
