"""Toy native models for the hostile-request tests (tests/protocols/test_v2_hostile.py)."""

from __future__ import annotations

import numpy as np

import inferd
from inferd import InferenceRequest, InferenceResponse


class Echo(inferd.Model):
    """Returns every input unchanged, under the same name."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(inputs)


class Failing(inferd.Model):
    """Raises in its own code: the data plane answers 500 and logs the traceback."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise RuntimeError("failing model: secret detail")


class Unencodable(inferd.Model):
    """Answers a response parameter no protocol can encode: the error surfaces outside the model's
    call, in the REST route, where no typed handler takes it (an unexpected 500)."""

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse({"y": np.zeros(1)}, parameters={"odd": Unserializable()})  # type: ignore[dict-item]


class Unserializable:
    """Not JSON, not a V2 parameter value."""
