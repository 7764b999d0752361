"""The identity model of bench/payload_sweep.py, as inferd serves it: the input tensor, returned.

Returning the very array it was given (no ``+ 0``) makes the sweep measure the server's path alone:
decoding, the data plane and encoding, with no model work and no copy of the model's own.

    inferd serve bench/identity_model.py:Identity --name identity
"""

from __future__ import annotations

import numpy as np

import inferd
from inferd import TensorSpec

INPUT, OUTPUT = "input-0", "output-0"


class Identity(inferd.Model):
    inputs = (TensorSpec(INPUT, "FP32", (-1, -1)),)
    outputs = (TensorSpec(OUTPUT, "FP32", (-1, -1)),)

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {OUTPUT: inputs[INPUT]}
