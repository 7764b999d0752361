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


class Models:
    """The API's models by name: ``_cortex_default`` alone for ``model_path``, else the ``models``
    names. Picking one follows Cortex's clients: the single model whatever name is asked, else the
    name is required and must be listed."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths, self.single = paths, list(paths) == [SINGLE_MODEL]

    def pick(self, model_name: str | None) -> str:
        if self.single:
            return SINGLE_MODEL
        if model_name is None:
            raise UserRuntimeError(
                f"model_name was not specified, choose one of the following: {list(self.paths)}"
            )
        if model_name not in self.paths:
            raise UserRuntimeError(f"'{model_name}' model wasn't found in the list of available models")
        return model_name


class OnnxClient:
    """``onnx_client.predict(model_input, model_name=None, model_version=None)`` over one session per
    model (a ``.onnx`` file, or a folder holding one, in its highest numeric version folder if any)."""

    def __init__(self, models: Models) -> None:
        self.models = models
        self.sessions = {name: onnx.open_session(onnx_file(path)) for name, path in models.paths.items()}
        self.inputs = {name: session.get_inputs() for name, session in self.sessions.items()}
        signatures = {name: onnx.signature_body(args) for name, args in self.inputs.items()}
        self.input_signatures = signatures[SINGLE_MODEL] if models.single else signatures

    def predict(
        self, model_input: Any, model_name: str | None = None, model_version: str | None = None
    ) -> Any:
        name = self.models.pick(model_name)
        return self.sessions[name].run([], to_feed(model_input, self.inputs[name], name))


def version_folder(path: Path) -> Path:
    """The latest version of a model folder: its highest numbered subfolder, else ``path`` itself
    (a file, or a folder with no versions); what Cortex passed to ``load_model(model_path)``."""
    if not path.is_dir():
        return path
    versions = [child for child in path.iterdir() if child.is_dir() and child.name.isdigit()]
    return max(versions, key=lambda child: int(child.name)) if versions else path


def onnx_file(path: Path) -> Path:
    """The model file of ``path``: itself, or the ``.onnx`` in it (in its highest version folder)."""
    if not path.is_dir():
        return path
    folder = version_folder(path)
    found = sorted(folder.glob("*.onnx"))
    if not found:
        raise UserRuntimeError(f"no .onnx file in {folder}")
    return found[0]


class TensorFlowClient:
    """``tensorflow_client.predict(model_input, model_name=None, model_version=None)``: a dict keyed by
    the signature's inputs in; each output's flat list out, as TF Serving's answer read (int64 values
    as strings, strings base64)."""

    def __init__(self, models: Models, signature_keys: dict[str, str | None]) -> None:
        from inferd.dialects.cortex import tensorflow

        self.models = models
        self.saved = {
            name: tensorflow.SavedModel(path, signature_keys.get(name)) for name, path in models.paths.items()
        }
        signatures = {name: model.signature_body() for name, model in self.saved.items()}
        self.input_signatures = signatures[SINGLE_MODEL] if models.single else signatures

    def predict(
        self, model_input: Any, model_name: str | None = None, model_version: str | None = None
    ) -> Any:
        name = self.models.pick(model_name)
        model = self.saved[name]
        if not isinstance(model_input, dict):
            raise UserRuntimeError("model_input: expected a dictionary keyed by the signature's input names")
        for key in model.inputs:
            if key not in model_input:
                raise UserRuntimeError(f"missing key '{key}' for model '{name}'")
        return model.flatten(model.run(model.to_inputs(model_input)))

    def close(self) -> None:
        for model in self.saved.values():
            model.close()


class PythonClient:
    """``python_client.get_model(model_name=None, model_version="latest")``: what the predictor's
    ``load_model(model_path)`` returned for that model, called once per model."""

    def __init__(self, models: Models) -> None:
        self.models = models
        self.predictor: Any = None
        self.loaded: dict[str, Any] = {}

    def get_model(self, model_name: str | None = None, model_version: str = "latest") -> Any:
        if not self.models.paths:
            raise UserRuntimeError("this API has no model_path or models")
        name = self.models.pick(model_name)
        if name not in self.loaded:
            load_model = getattr(self.predictor, "load_model", None)
            if not callable(load_model):
                raise UserRuntimeError("the PythonPredictor class has no load_model(model_path) method")
            self.loaded[name] = load_model(str(version_folder(self.models.paths[name])))
        return self.loaded[name]


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
        api = self.api
        if api.named_models:
            models = Models(
                {model.name: model.model for model in api.named_models if model.model is not None}
            )
            keys = {model.name: model.signature_key for model in api.named_models}
        else:
            models = Models({SINGLE_MODEL: api.model} if api.model is not None else {})
            keys = {SINGLE_MODEL: api.signature_key}
        if api.predictor_type == "onnx":
            clients["onnx_client"] = self.client = OnnxClient(models)
        elif api.predictor_type == "tensorflow":
            clients["tensorflow_client"] = self.client = TensorFlowClient(models, keys)
        else:
            self.client = PythonClient(models)
            clients["model_client" if api.handler_class else "python_client"] = self.client
        self.instance = self.predictor_class.construct(self.api, clients)
        if isinstance(self.client, PythonClient):
            self.client.predictor = self.instance
        logger.info("api %s is ready at %s", self.api.name, self.api.endpoint)

    def unload(self) -> None:
        if isinstance(self.client, TensorFlowClient):
            self.client.close()

    def call(self, payload: Any, query_params: Any = None, headers: Any = None, method: str = "POST") -> Any:
        """The method answering ``method`` (``predict``, or a Handler's ``handle_<method>``) with the
        arguments it names; ``post_predict`` after ``predict``, its errors only logged."""
        available = {
            "payload": payload,
            "query_params": QueryParams() if query_params is None else query_params,
            "headers": Headers() if headers is None else headers,
            "batch_id": None,
        }
        function, names = self.predictor_class.methods[method]
        result = getattr(self.instance, function)(**{name: available[name] for name in names})
        post_names = self.predictor_class.post_predict_args
        if post_names is not None:
            try:
                self.instance.post_predict(
                    **{name: {**available, "response": result}[name] for name in post_names}
                )
            except Exception:
                logger.exception("api %s: post_predict failed", self.api.name)
        return result

    async def call_async(self, payload: Any, query_params: Any, headers: Any, method: str = "POST") -> Any:
        if not self.predict_in_thread:
            return self.call(payload, query_params, headers, method)
        async with self.lock:
            return await asyncio.to_thread(self.call, payload, query_params, headers, method)

    def respond(self, sample: Any, debug: bool) -> Any:
        return self.call(sample)

    def signature(self) -> dict[str, Any] | None:
        signatures = getattr(self.client, "input_signatures", None)
        return None if signatures is None else {"signature": signatures}

    def predict(self, inputs: Tensors) -> Tensors:
        """V2: each element of ``json`` is a JSON payload; each answer is JSON (bytes stay bytes)."""
        if "POST" not in self.predictor_class.methods:
            raise InvalidInput(f"api {self.api.name}: the Handler has no handle_post for V2 to call")
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
