"""Toy native models for the V2 gRPC tests, served together (each under its lower-cased class name)."""

from __future__ import annotations

import numpy as np

import inferd
from inferd import InferenceRequest, InferenceResponse, TensorSpec


class Echo(inferd.Model):
    """Returns every input unchanged, renamed ``<input>-out``; declares no signature, so takes anything."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {f"{name}-out": array for name, array in inputs.items()}


class Stats(inferd.Model):
    """A declared signature: rows of three FP32 features in, their sum and maximum out."""

    inputs = (TensorSpec("x", "FP32", (-1, 3)),)
    outputs = (TensorSpec("sum", "FP32", (-1,)), TensorSpec("max", "FP32", (-1,)))

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["x"]
        return {"sum": x.sum(axis=1), "max": x.max(axis=1)}


class Params(inferd.Model):
    """Answers with the request parameters (plus one per input) as response parameters."""

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        parameters = dict(request.parameters)
        for name, tensor_parameters in request.input_parameters.items():
            parameters.update({f"{name}.{key}": value for key, value in tensor_parameters.items()})
        return InferenceResponse(
            {"count": np.array([len(request.inputs)], dtype=np.int32)}, parameters=parameters
        )


class Failing(inferd.Model):
    """Raises with a message that must never reach the client."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise RuntimeError("secret internal detail /srv/model/weights.bin")


class Reloadable(inferd.Model):
    """For repository unload/load; answers with how many times it was loaded."""

    loads = 0

    def load(self) -> None:
        type(self).loads += 1

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"loads": np.array([type(self).loads], dtype=np.int64)}


class Fragile(inferd.Model):
    """Loads at start-up, but every later load fails (the repository load failure path)."""

    loads = 0

    def load(self) -> None:
        type(self).loads += 1
        if type(self).loads > 1:
            raise OSError("weights vanished")

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"ok": np.array([True])}
