"""Cortex APIs as inferd `Model`s.

Over V2 an ONNX or TensorFlow API is its raw model (inputs and outputs of the session or signature,
handlers bypassed); the Cortex route calls `respond`, which runs pre_inference → conversion → model →
post_inference. `respond` is
synchronous and runs on the event loop, so one API's handlers are never called concurrently (Cortex
promised handler globals are safe) and a sub-millisecond model pays no thread hop. With
``predict_in_thread`` it runs in a thread instead, one call at a time per API (`lock`).

``load`` makes the project dir the working directory of the serving process, so handler code opening
relative paths reads project files (Cortex ran it in ``/mnt/project``; code that hard-codes
``/mnt/project/...`` needs a ``/mnt/project`` symlink to the project dir, which inferd does not create).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import orjson

from inferd.core.batching import Batcher, BatchSettings, BatchSizeMismatch, split_rows
from inferd.core.errors import InvalidInput
from inferd.core.model import Model
from inferd.core.types import ModelMetadata, Tensors, TensorSpec
from inferd.dialects.cortex import onnx, tensorflow
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.errors import CortexError
from inferd.dialects.cortex.handlers import Handlers, Hook
from inferd.dialects.cortex.json_body import dumps

logger = logging.getLogger("inferd.cortex")

DEBUG_ITEMS, DEBUG_CHARS = 10, 500
#: The V2 tensor of a predictor's JSON samples and answers (ABEJA's JSON handlers use the same name).
JSON_TENSOR = "json"


class CortexModel(Model):
    """What the Cortex routes need of an API, whatever runs it."""

    def __init__(self, api: ApiConfig) -> None:
        self.api = api
        self.lock = asyncio.Lock()

    async def respond_async(self, sample: Any, debug: bool) -> Any:
        """`respond` on the loop, or in a thread (one at a time) when ``predict_in_thread`` is set."""
        if not self.predict_in_thread:
            return self.respond(sample, debug)
        async with self.lock:
            return await asyncio.to_thread(self.respond, sample, debug)

    def respond(self, sample: Any, debug: bool) -> Any:
        """The response value for one sample; exceptions become 406 ``prediction failed``."""
        raise NotImplementedError

    def signature(self) -> dict[str, Any] | None:
        """The ``GET <endpoint>/signature`` body, or None where the API has none."""
        return None


class HandlerApi(CortexModel):
    """An API with request handlers around a model: pre_inference → conversion → model → post_inference.
    Subclasses say how the model loads, converts, runs and describes itself."""

    def __init__(self, api: ApiConfig, handlers: Handlers) -> None:
        super().__init__(api)
        self.handlers = handlers
        self.specs_in: tuple[TensorSpec, ...] = ()
        self.specs_out: tuple[TensorSpec, ...] = ()

    def load(self) -> None:
        os.chdir(self.api.project_dir)
        self.load_model()
        _log_handlers(self.handlers)
        logger.info("api %s is ready at %s", self.api.name, self.api.endpoint)

    def load_model(self) -> None:
        raise NotImplementedError

    def metadata(self) -> ModelMetadata:
        return replace(super().metadata(), inputs=self.specs_in, outputs=self.specs_out)

    def respond(self, sample: Any, debug: bool) -> Any:
        prediction = self.run_model(self.pre_inference(sample, debug))
        _debug(debug, "prediction", prediction)
        return self.post_inference(prediction, debug)

    def pre_inference(self, sample: Any, debug: bool) -> Any:
        _debug(debug, "sample", sample)
        handlers = self.handlers
        if handlers.pre_inference is None:
            return sample
        prepared = _call(
            handlers, "pre_inference", handlers.pre_inference, sample, self.signature_in(), self.api.metadata
        )
        _debug(debug, "pre_inference", prepared)
        return prepared

    def post_inference(self, prediction: Any, debug: bool) -> Any:
        handlers = self.handlers
        if handlers.post_inference is None:
            return prediction
        result = _call(
            handlers,
            "post_inference",
            handlers.post_inference,
            prediction,
            self.signature_out(),
            self.api.metadata,
        )
        _debug(debug, "post_inference", result)
        return result

    def run_model(self, prepared: Any) -> Any:
        """The model's answer to a prepared sample, as post_inference receives it."""
        raise NotImplementedError

    def signature_in(self) -> Any:
        """The signature argument of pre_inference."""
        raise NotImplementedError

    def signature_out(self) -> Any:
        """The signature argument of post_inference."""
        raise NotImplementedError


class OnnxApi(HandlerApi):
    """An ONNX model behind handlers. With batching on (and a free first dimension on every input),
    concurrent requests run pre_inference and post_inference each for their own sample and share one
    ONNX run over their stacked inputs."""

    platform: ClassVar[str] = "onnxruntime_onnx"

    def __init__(self, api: ApiConfig, handlers: Handlers, batching: BatchSettings | None = None) -> None:
        super().__init__(api, handlers)
        self.batching = batching or BatchSettings()
        self.batcher: Batcher[dict[str, Any], list[Any]] | None = None

    def load_model(self) -> None:
        assert self.api.model is not None
        self.session = onnx.open_session(self.api.model)
        self.node_args_in, self.node_args_out = self.session.get_inputs(), self.session.get_outputs()
        self.specs_in = onnx.tensor_specs(self.node_args_in)
        self.specs_out = onnx.tensor_specs(self.node_args_out)
        self._v2_outputs = [spec.name for spec in self.specs_out]
        free_batch = all(arg.shape and not isinstance(arg.shape[0], int) for arg in self.node_args_in)
        if self.batching.enabled and free_batch:
            self.batcher = Batcher(self._run_batch, self.batching, self.api.name)

    async def respond_async(self, sample: Any, debug: bool) -> Any:
        if self.batcher is None:
            return await super().respond_async(sample, debug)
        inputs = onnx.to_inputs(self.pre_inference(sample, debug), self.node_args_in)
        rows = {array.shape[0] if array.ndim else 0 for array in inputs.values()}
        count = rows.pop() if len(rows) == 1 else 0
        if 0 < count <= self.batching.max_batch_size:
            key = tuple(sorted((name, array.dtype.str, array.shape[1:]) for name, array in inputs.items()))
            prediction = await self.batcher.submit(inputs, count, key)
        else:
            prediction = self.session.run(None, inputs)
        _debug(debug, "prediction", prediction)
        return self.post_inference(prediction, debug)

    async def _run_batch(self, items: list[dict[str, Any]]) -> list[list[Any]]:
        stacked = {name: np.concatenate([item[name] for item in items]) for name in items[0]}
        outputs = await self.call_user(self.session.run, None, stacked)
        rows = [len(next(iter(item.values()))) for item in items]
        pieces = [_split(output, rows) for output in outputs]
        return [[piece[index] for piece in pieces] for index in range(len(items))]

    def predict(self, inputs: Tensors) -> Tensors:
        return dict(zip(self._v2_outputs, self.session.run(self._v2_outputs, inputs), strict=True))

    def run_model(self, prepared: Any) -> Any:
        return self.session.run(None, onnx.to_inputs(prepared, self.node_args_in))

    def signature_in(self) -> Any:
        return self.node_args_in

    def signature_out(self) -> Any:
        return self.node_args_out

    def signature(self) -> dict[str, Any]:
        return {"signature": onnx.signature_body(self.node_args_in)}


class TensorFlowApi(HandlerApi):
    """A SavedModel's chosen signature; handlers get the whole signature map, as behind TF Serving."""

    platform: ClassVar[str] = "tensorflow_savedmodel"

    def load_model(self) -> None:
        assert self.api.model is not None
        self.model = tensorflow.SavedModel(self.api.model, self.api.signature_key)
        self.specs_in = tensorflow.tensor_specs(self.model.inputs)
        self.specs_out = tensorflow.tensor_specs(self.model.outputs)

    def unload(self) -> None:
        self.model.close()

    def predict(self, inputs: Tensors) -> Tensors:
        return self.model.run(inputs)

    def run_model(self, prepared: Any) -> Any:
        return self.model.flatten(self.model.run(self.model.to_inputs(prepared)))

    def signature_in(self) -> Any:
        return self.model.signature_map

    def signature_out(self) -> Any:
        return self.model.signature_map

    def signature(self) -> dict[str, Any]:
        return {"signature": self.model.signature_body()}


class PredictorApi(CortexModel):
    """The 0.10 ``predictor``: ``init(model_path, metadata)`` once, ``predict(sample, metadata)`` per request.
    It has no tensors: over V2 it takes one BYTES input ``json`` (each element a sample, the JSON body
    its endpoint takes) and answers one BYTES output ``json`` (each element the JSON its endpoint
    answers), as ABEJA's JSON handlers do."""

    inputs = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)
    outputs = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)

    def __init__(
        self, api: ApiConfig, init: Callable[..., Any] | None, predict_fn: Callable[..., Any]
    ) -> None:
        super().__init__(api)
        self.init, self.predict_fn = init, predict_fn

    def load(self) -> None:
        os.chdir(self.api.project_dir)
        if self.init is not None:
            model = str(self.api.model) if self.api.model is not None else None
            self.init(model, self.api.metadata)
        logger.info("api %s is ready at %s", self.api.name, self.api.endpoint)

    def respond(self, sample: Any, debug: bool) -> Any:
        _debug(debug, "sample", sample)
        try:
            result = self.predict_fn(sample, self.api.metadata)
        except CortexError:
            raise
        except Exception as exc:
            raise CortexError(self.api.handler_name or "", "predict", str(exc), "runtime exception") from exc
        _debug(debug, "prediction", result)
        return result

    def predict(self, inputs: Tensors) -> Tensors:
        """V2: each element of ``json`` answered as its endpoint answers the same JSON body."""
        answers = []
        for document in inputs[JSON_TENSOR].ravel():
            try:
                sample = orjson.loads(document if isinstance(document, (bytes, str)) else str(document))
            except orjson.JSONDecodeError as exc:
                raise InvalidInput(f"input '{JSON_TENSOR}': an element is not JSON ({exc})") from None
            answers.append(dumps(self.respond(sample, False)).rstrip(b"\n"))
        return {JSON_TENSOR: np.array(answers, dtype=object)}


def _split(output: Any, rows: list[int]) -> list[Any]:
    """One ONNX output cut back per request: arrays on axis 0, lists (a ZipMap's dicts) by items."""
    if isinstance(output, list):
        if len(output) != sum(rows):
            raise BatchSizeMismatch(f"the model answered {len(output)} items for a batch of {sum(rows)}")
        bounds = np.cumsum([0, *rows])
        return [output[start:end] for start, end in itertools.pairwise(bounds)]
    return split_rows(np.asarray(output), rows)


def _call(handlers: Handlers, stage: str, hook: Hook, value: Any, signature: Any, metadata: Any) -> Any:
    try:
        return hook(value, signature, metadata)
    except Exception as exc:
        raise CortexError(handlers.path, f"{stage} request handler", str(exc), "runtime exception") from exc


def _log_handlers(handlers: Handlers) -> None:
    for stage, hook in (
        ("pre_inference", handlers.pre_inference),
        ("post_inference", handlers.post_inference),
    ):
        if hook is None:
            logger.info("%s request handler not found", stage)
        else:
            logger.info("using %s request handler provided in %s", stage, handlers.path)


def _debug(debug: bool, stage: str, value: Any) -> None:
    if debug:
        logger.info("%s: %s", stage, _short(value))


def _short(value: Any) -> str:
    """At most 10 elements and 500 characters of ``value``, as Cortex's debug logging showed it."""
    if isinstance(value, (list, tuple)) and len(value) > DEBUG_ITEMS:
        value = [*value[:DEBUG_ITEMS], "..."]
    elif isinstance(value, dict) and len(value) > DEBUG_ITEMS:
        value = dict(list(value.items())[:DEBUG_ITEMS])
    text = repr(value)
    return text if len(text) <= DEBUG_CHARS else text[:DEBUG_CHARS] + "..."
