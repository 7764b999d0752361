"""Cortex 0.12-0.33 predictor classes as inferd `Model`s, and the model clients they were handed.

``PythonPredictor(config[, python_client])``, ``ONNXPredictor(onnx_client, config)`` and
``TensorFlowPredictor(tensorflow_client, config)``: built once when the model loads, then
``predict(payload[, query_params, headers])`` per request (`predictor_classes` says which arguments a
method gets). The clients run the API's one model in-process: `OnnxClient` with Cortex 0.2x's input
conversion (a dict keyed by input names, or a bare value for a one-input model; dynamic dimensions
free, so a batch passes), `TensorFlowClient` over the SavedModel loader of the 0.10 dialect, and
`PythonClient`, whose ``get_model()`` calls the predictor's own ``load_model(model_path)`` once.

Over V2 a predictor class takes one BYTES input ``json`` and answers one BYTES output ``json``, as a
0.10 predictor does (`adapter.PredictorApi`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import orjson
from starlette.datastructures import Headers, QueryParams

from inferd.core.errors import InvalidInput
from inferd.core.types import Tensors, TensorSpec
from inferd.dialects.cortex import onnx
from inferd.dialects.cortex.adapter import JSON_TENSOR, CortexModel
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.json_body import dumps
from inferd.dialects.cortex.predictor_classes import PredictorClass

logger = logging.getLogger("inferd.cortex")

#: The name Cortex gave the single model of a ``model_path`` API.
SINGLE_MODEL = "_cortex_default"


class UserRuntimeError(Exception):
    """What Cortex's clients raised for a wrong model name or input (``UserRuntimeException``)."""


class OnnxClient:
    """``onnx_client.predict(model_input, model_name=None, model_version=None)`` over one session."""

    def __init__(self, path: Path) -> None:
        self.session = onnx.open_session(path)
        self.inputs = self.session.get_inputs()
        self.input_signatures = onnx.signature_body(self.inputs)

    def predict(
        self, model_input: Any, model_name: str | None = None, model_version: str | None = None
    ) -> Any:
        _check_model(model_name)
        return self.session.run([], to_feed(model_input, self.inputs, model_name or SINGLE_MODEL))


class TensorFlowClient:
    """``tensorflow_client.predict(model_input, model_name=None, model_version=None)``: a dict keyed by
    the signature's inputs in; each output's flat list out, as TF Serving's answer read (int64 values
    as strings, strings base64)."""

    def __init__(self, path: Path, signature_key: str | None) -> None:
        from inferd.dialects.cortex import tensorflow

        self.model = tensorflow.SavedModel(path, signature_key)
        self.input_signatures = self.model.signature_body()

    def predict(
        self, model_input: Any, model_name: str | None = None, model_version: str | None = None
    ) -> Any:
        _check_model(model_name)
        if not isinstance(model_input, dict):
            raise UserRuntimeError("model_input: expected a dictionary keyed by the signature's input names")
        for name in self.model.inputs:
            if name not in model_input:
                raise UserRuntimeError(f"missing key '{name}' for model '{model_name or SINGLE_MODEL}'")
        return self.model.flatten(self.model.run(self.model.to_inputs(model_input)))


class PythonClient:
    """``python_client.get_model(model_name=None, model_version="latest")``: the predictor's
    ``load_model(model_path)`` of the API's model, called once."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.loaded = path, False
        self.predictor: Any = None
        self.model: Any = None

    def get_model(self, model_name: str | None = None, model_version: str = "latest") -> Any:
        _check_model(model_name)
        if self.path is None:
            raise UserRuntimeError("this API has no model_path")
        if not self.loaded:
            load_model = getattr(self.predictor, "load_model", None)
            if not callable(load_model):
                raise UserRuntimeError("the PythonPredictor class has no load_model(model_path) method")
            self.model, self.loaded = load_model(str(self.path)), True
        return self.model


def _check_model(name: str | None) -> None:
    if name not in (None, SINGLE_MODEL):
        raise UserRuntimeError(f"'{name}' model wasn't found in the list of available models")


def to_feed(model_input: Any, args: list[Any], model: str) -> dict[str, Any]:
    """Cortex 0.2x's ``convert_to_onnx_input``: a dynamic dimension is free (-1) and the value is
    reshaped when at most one is. Cortex freed only named (symbolic) dimensions and set unnamed ones to
    1, so a batch failed on a model with an unnamed batch dimension (skl2onnx's ``None``); here it passes."""
    if len(args) == 1 and not isinstance(model_input, dict):
        return {args[0].name: _array(model_input, args[0], model)}
    if not isinstance(model_input, dict):
        keys = ", ".join(f'"{arg.name}"' for arg in args)
        raise UserRuntimeError(
            f"expected model_input to be a dictionary with keys '{keys}' for model '{model}'"
        )
    feed = {}
    for arg in args:
        if model_input.get(arg.name) is None:
            raise UserRuntimeError(f"missing key '{arg.name}' for model '{model}'")
        feed[arg.name] = _array(model_input[arg.name], arg, model)
    return feed


def _array(value: Any, arg: Any, model: str) -> Any:
    dtype = onnx.ONNX_DTYPES.get(arg.type)
    if dtype is None:
        raise UserRuntimeError(f"unsupported input type {arg.type} for model '{model}'")
    shape = [dim if isinstance(dim, int) else -1 for dim in arg.shape]
    try:
        array = value.astype(dtype) if isinstance(value, np.ndarray) else np.array(value, dtype=dtype)
        return array.reshape(shape) if shape.count(-1) <= 1 else array
    except Exception as exc:
        raise UserRuntimeError(f"failed to convert to numpy array for model '{model}': {exc}") from None


class ClassApi(CortexModel):
    """A predictor class: constructed in `load`, ``predict`` (then ``post_predict``) per request, one
    call at a time as with Cortex's default of one thread per process."""

    inputs: ClassVar[tuple[TensorSpec, ...]] = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)
    outputs: ClassVar[tuple[TensorSpec, ...]] = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)

    def __init__(self, api: ApiConfig, predictor: PredictorClass) -> None:
        super().__init__(api)
        self.predictor_class = predictor
        self.instance: Any = None
        self.client: OnnxClient | TensorFlowClient | PythonClient | None = None

    def load(self) -> None:
        os.chdir(self.api.project_dir)
        clients: dict[str, Any] = {}
        if self.api.predictor_type == "onnx":
            assert self.api.model is not None
            clients["onnx_client"] = self.client = OnnxClient(self.api.model)
        elif self.api.predictor_type == "tensorflow":
            assert self.api.model is not None
            clients["tensorflow_client"] = self.client = TensorFlowClient(
                self.api.model, self.api.signature_key
            )
        else:
            python_client = PythonClient(self.api.model)
            clients["python_client"] = self.client = python_client
        self.instance = self.predictor_class.construct(self.api, clients)
        if isinstance(self.client, PythonClient):
            self.client.predictor = self.instance
        logger.info("api %s is ready at %s", self.api.name, self.api.endpoint)

    def unload(self) -> None:
        if isinstance(self.client, TensorFlowClient):
            self.client.model.close()

    def call(self, payload: Any, query_params: Any = None, headers: Any = None) -> Any:
        """``predict`` with the arguments it names; ``post_predict`` after it, its errors only logged."""
        available = {
            "payload": payload,
            "query_params": QueryParams() if query_params is None else query_params,
            "headers": Headers() if headers is None else headers,
            "batch_id": None,
        }
        names = self.predictor_class.predict_args
        result = self.instance.predict(**{name: available[name] for name in names})
        post_names = self.predictor_class.post_predict_args
        if post_names is not None:
            try:
                self.instance.post_predict(
                    **{name: {**available, "response": result}[name] for name in post_names}
                )
            except Exception:
                logger.exception("api %s: post_predict failed", self.api.name)
        return result

    async def call_async(self, payload: Any, query_params: Any, headers: Any) -> Any:
        if not self.predict_in_thread:
            return self.call(payload, query_params, headers)
        async with self.lock:
            return await asyncio.to_thread(self.call, payload, query_params, headers)

    def respond(self, sample: Any, debug: bool) -> Any:
        return self.call(sample)

    def signature(self) -> dict[str, Any] | None:
        signatures = getattr(self.client, "input_signatures", None)
        return None if signatures is None else {"signature": signatures}

    def predict(self, inputs: Tensors) -> Tensors:
        """V2: each element of ``json`` is a JSON payload; each answer is JSON (bytes stay bytes)."""
        answers: list[bytes] = []
        for document in inputs[JSON_TENSOR].ravel():
            try:
                payload = orjson.loads(document if isinstance(document, (bytes, str)) else str(document))
            except orjson.JSONDecodeError as exc:
                raise InvalidInput(f"input '{JSON_TENSOR}': an element is not JSON ({exc})") from None
            result = self.call(payload)
            answers.append(
                bytes(result) if isinstance(result, (bytes, bytearray)) else dumps(result).rstrip(b"\n")
            )
        return {JSON_TENSOR: np.array(answers, dtype=object)}
