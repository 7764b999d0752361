"""A stateful native model for tests/server/test_sequences.py: a running sum per sequence."""

from __future__ import annotations

from typing import Any

import numpy as np

import inferd
from inferd import TensorSpec


class Accumulator(inferd.SequenceModel):
    """Adds each request's ``x`` to its sequence's total and answers the total so far."""

    inputs = (TensorSpec("x", "INT64", (1,)),)
    outputs = (TensorSpec("total", "INT64", (1,)),)

    def initial_state(self) -> dict[str, Any]:
        return {"total": 0}

    def predict(self, inputs: dict[str, np.ndarray], state: dict[str, Any]) -> dict[str, np.ndarray]:
        state["total"] += int(inputs["x"][0])
        return {"total": np.array([state["total"]], dtype=np.int64)}
