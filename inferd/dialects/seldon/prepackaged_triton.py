"""Seldon's TRITON_SERVER as a graph node: the node's ``modelUri`` is a Triton model repository (or
one model folder of it) whose model is an ONNX file or a SavedModel (``config.pbtxt`` with
``platform: onnxruntime_onnx``, ``backend: onnxruntime`` or ``platform: tensorflow_savedmodel``),
run in-process. Seldon runs Triton's image and its clients call Triton's V2 API; here the node is a
Seldon component like the graph's others: ``predict(X)`` feeds ``X`` to the model's one input (cast
to the datatype ``config.pbtxt`` declares) and answers its one declared output, or an object of
them all (Seldon's jsonData) when it declares several. ``model_name`` chooses the model of a
repository holding several; the highest version folder is served."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput, ModelLoadError
from inferd.core.types import DTYPES
from inferd.dialects.frameworks.savedmodel import SERVING_TAG, find_saved_model
from inferd.dialects.frameworks.triton import CONFIG_FILE, ConfigError, TritonConfig, read_config
from inferd.dialects.seldon.prepackaged import Prepackaged


class TritonServer(Prepackaged):
    """Seldon's TRITON_SERVER, for ONNX and SavedModel models."""

    def __init__(self, model_uri: str | None = None, model_name: str = "", **_: Any) -> None:
        super().__init__(model_uri)
        self.model_name = model_name

    def model_folder(self) -> Path:
        root = self.folder
        if (root / CONFIG_FILE).is_file():
            return root
        found = (
            sorted(entry for entry in root.iterdir() if (entry / CONFIG_FILE).is_file())
            if root.is_dir()
            else []
        )
        if self.model_name:
            chosen = [entry for entry in found if entry.name == self.model_name]
            if not chosen:
                raise ModelLoadError(f"TRITON_SERVER: no model {self.model_name!r} in {self.model_uri}")
            return chosen[0]
        if len(found) != 1:
            names = [entry.name for entry in found]
            raise ModelLoadError(
                f"TRITON_SERVER: {self.model_uri} holds the models {names}; name one with the model_name "
                f"parameter"
                if found
                else f"TRITON_SERVER: no {CONFIG_FILE} in {self.model_uri}"
            )
        return found[0]

    def load(self) -> None:
        folder = self.model_folder()
        try:
            self.config: TritonConfig = read_config(folder)
        except ConfigError as exc:
            raise ModelLoadError(f"TRITON_SERVER: {folder}: {exc}") from None
        found = self.config.model_format()
        if found is None:
            raise ModelLoadError(
                f"TRITON_SERVER: {folder}: {self.config.kind or '(no platform)'!r} is a Triton backend "
                "inferd cannot run (it runs ONNX and TensorFlow SavedModel models)"
            )
        versions = [entry for entry in folder.iterdir() if entry.name.isdigit() and entry.is_dir()]
        if not versions:
            raise ModelLoadError(f"TRITON_SERVER: {folder} has no version folder (1/, 2/...)")
        path = max(versions, key=lambda entry: int(entry.name)) / found[1]
        self.run = self._onnx(path) if found[0] == "onnx" else self._savedmodel(path)

    def _onnx(self, path: Path) -> Any:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [item.name for item in session.get_inputs()]
        outputs = [spec.name for spec in self.config.outputs] or [item.name for item in session.get_outputs()]
        wanted = self._input(names)

        def run(X: Any) -> dict[str, Any]:
            return dict(zip(outputs, session.run(outputs, {wanted: self._fed(X, wanted)}), strict=True))

        return run

    def _savedmodel(self, path: Path) -> Any:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        loaded = tf.saved_model.load(str(find_saved_model(path)), tags=[SERVING_TAG])
        function = loaded.signatures["serving_default"]
        wanted = self._input(sorted(function.structured_input_signature[1]))
        declared = [spec.name for spec in self.config.outputs]

        def run(X: Any) -> dict[str, Any]:
            found = function(**{wanted: tf.constant(self._fed(X, wanted))})
            return {name: found[name].numpy() for name in declared or sorted(found)}

        self._keep = loaded
        return run

    def _input(self, names: list[str]) -> str:
        declared = [spec.name for spec in self.config.inputs] or names
        if len(declared) != 1:
            raise ModelLoadError(f"TRITON_SERVER: X is fed to a model of one input; this one has {declared}")
        return declared[0]

    def _fed(self, X: Any, name: str) -> Any:
        spec = next((spec for spec in self.config.inputs if spec.name == name), None)
        dtype = DTYPES[spec.datatype] if spec is not None and spec.datatype != "BYTES" else None
        return np.asarray(X, dtype=dtype)

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        try:
            outputs = self.run(X)
        except Exception as exc:  # what the runtimes raise for inputs they cannot take
            if type(exc).__name__ in ("InvalidArgument", "Fail", "InvalidArgumentError", "ValueError"):
                raise InvalidInput(f"TRITON_SERVER: {' '.join(str(exc).split())[:500]}") from None
            raise
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return {name: np.asarray(value).tolist() for name, value in outputs.items()}
