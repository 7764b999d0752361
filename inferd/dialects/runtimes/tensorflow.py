"""TensorFlow SavedModels (``saved_model.pb``, directly in the folder or in TF Serving's numeric
version folders ``1/``, ``2/``: the highest is served), as TF Serving and KServe's tensorflow
runtime serve them: the serving signature's inputs and outputs are the model's (names, datatypes
and shapes, checked by the data plane), chosen by ``signature_key`` (default ``serving_default``,
TF Serving's; a model of one signature is served by it whatever its key). Inputs are fed by name,
outputs answered by name; the Cortex room reads SavedModels with the same code
(`inferd.dialects.frameworks.savedmodel`) for its own request shapes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput, ModelLoadError
from inferd.core.model import Model
from inferd.core.types import Array, InferenceRequest, InferenceResponse, ModelMetadata
from inferd.dialects.frameworks.savedmodel import (
    SERVING_TAG,
    find_saved_model,
    ports,
    signature_defs,
    tensor_specs,
)
from inferd.dialects.runtimes.declared import declared

#: TF Serving's default signature.
DEFAULT_SIGNATURE = "serving_default"


def choose(definitions: dict[str, Any], wanted: str | None, folder: Path) -> str:
    """``wanted`` (the ``signature_key`` setting) when set; else ``serving_default``; else the only
    signature; else an error naming them."""
    keys = sorted(definitions)
    key = wanted or DEFAULT_SIGNATURE
    if key in definitions:
        return key
    if wanted is None and len(keys) == 1:
        return keys[0]
    found = ", ".join(keys) or "none"
    hint = "" if wanted else " (set signature_key to choose one)"
    raise ModelLoadError(f"{folder}: signature {key!r} not found; the model has: {found}{hint}")


class SavedModelModel(Model):
    platform = "tensorflow_savedmodel"

    def __init__(self, path: Path, signature_key: str | None, triton_config: str | None = None) -> None:
        self.path, self.signature_key, self.triton_config = path, signature_key, triton_config

    def load(self) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        folder = find_saved_model(self.path if self.path.is_dir() else self.path.parent)
        definitions = signature_defs(folder)
        self.key = choose(definitions, self.signature_key, folder)
        self.ports_in = ports(definitions[self.key].inputs)
        self.ports_out = ports(definitions[self.key].outputs)
        try:
            self.loaded = tf.saved_model.load(str(folder), tags=[SERVING_TAG])
        except Exception as exc:
            raise ModelLoadError(f"cannot load {folder}: {type(exc).__name__}: {_line(exc)}") from None
        self.function = self.loaded.signatures[self.key]
        self.constant = tf.constant
        self.input_specs, self.output_specs = declared(
            self.triton_config, tensor_specs(self.ports_in), tensor_specs(self.ports_out), folder
        )

    def metadata(self) -> ModelMetadata:
        versions = (self.version,) if self.version else ()
        return ModelMetadata(self.name, versions, self.platform, self.input_specs, self.output_specs)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        missing = [name for name in self.ports_in if name not in request.inputs]
        if missing:
            raise InvalidInput(f"model '{self.name}' needs the inputs {missing} (signature {self.key!r})")
        feed = {name: _fed(array, self.ports_in[name].numpy) for name, array in request.inputs.items()}
        found = await self.call_user(self._run, feed)
        wanted = (
            [output.name for output in request.outputs]
            if request.outputs
            else [spec.name for spec in self.output_specs]
        )
        return InferenceResponse({name: found[name] for name in wanted})

    def _run(self, feed: dict[str, Array]) -> dict[str, Array]:
        import tensorflow as tf

        try:
            outputs = self.function(**{name: self.constant(value) for name, value in feed.items()})
        except (tf.errors.InvalidArgumentError, ValueError, TypeError) as exc:
            raise InvalidInput(f"model '{self.name}': {_line(exc)}") from None
        return {name: _array(tensor.numpy()) for name, tensor in outputs.items()}


def _fed(array: Array, dtype: np.dtype[Any]) -> Array:
    """An input as the signature's dtype (text as bytes, which TensorFlow's strings are)."""
    if dtype.kind == "O":
        return np.vectorize(_bytes, otypes=[object])(array) if array.size else array.astype(object)
    return array if array.dtype == dtype else array.astype(dtype)


def _array(value: Any) -> Array:
    return np.asarray(value)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]
