"""A model of one tabular model file (scikit-learn, XGBoost, LightGBM): the inputs of a request made
into one feature matrix and answered by the estimator's methods, as MLServer's runtimes do.

Each method is an output of its name (``predict``, ``predict_proba``...). A request chooses them by
the outputs it names, else by its ``method`` parameter, else the ``predict_method`` setting, else
``predict``. Inputs may have any name and any numeric datatype (the metadata says what the model
prefers): one input is the matrix (a row when it has one dimension), several are its columns in
their order (MLServer's ``pd`` content type).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from inferd.core.errors import InvalidInput, ModelLoadError
from inferd.core.importer import import_from_string
from inferd.core.model import Model
from inferd.core.types import Array, InferenceRequest, InferenceResponse, ModelMetadata, TensorSpec
from inferd.dialects.runtimes.formats import FileFormat

logger = logging.getLogger("inferd.runtimes")

#: The request parameter naming the method (MLServer's and Seldon's name for it).
METHOD_PARAMETER = "method"


class Estimator(Protocol):
    """What a format's module makes of a file."""

    platform: str
    #: The datatype the model computes in, reported as its input's.
    input_datatype: str
    #: Features per row, when the model knows it.
    n_features: int | None
    #: The methods it answers; the first is its default.
    methods: tuple[str, ...]
    #: Whether its features must be numbers (text can reach a scikit-learn pipeline).
    numeric_only: bool

    def run(self, method: str, features: Array) -> Array:
        """The output of ``method`` for ``features`` (rows by features)."""

    def output(self, method: str) -> TensorSpec:
        """The output ``method`` gives, for the metadata."""


class FileModel(Model):
    """A tabular model file, loaded with the first of ``formats`` that reads it."""

    def __init__(self, path: Path, formats: list[FileFormat], method: str | None) -> None:
        self.path, self.formats, self.default_method = path, formats, method

    def load(self) -> None:
        tried: list[str] = []
        for found in self.formats:
            build = import_from_string(found.runtime)
            try:
                self.estimator: Estimator = build(self.path)
            except Exception as exc:
                tried.append(f"as {found.title}: {type(exc).__name__}: {' '.join(str(exc).split())}")
                continue
            if len(self.formats) > 1:
                logger.info("%s read as a %s model", self.path, found.title)
            break
        else:
            raise ModelLoadError(f"cannot load {self.path} " + "; ".join(tried))
        method = self.default_method
        if method is not None and method not in self.estimator.methods:
            raise ModelLoadError(
                f"{self.path}: predict_method {method!r} is not a method of this model; it has "
                f"{list(self.estimator.methods)}"
            )

    def metadata(self) -> ModelMetadata:
        estimator = self.estimator
        features = -1 if estimator.n_features is None else estimator.n_features
        # an MLflow model's signature, when it has one, else what the estimator knows
        declared: tuple[TensorSpec, ...] = getattr(estimator, "signature_inputs", ())
        inputs = declared or (TensorSpec("input-0", estimator.input_datatype, (-1, features)),)
        outputs = tuple(estimator.output(method) for method in estimator.methods)
        versions = (self.version,) if self.version else ()
        return ModelMetadata(self.name, versions, estimator.platform, inputs, outputs, loose_inputs=True)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        features = self.features(request)
        outputs: dict[str, Array] = {}
        for method in self.methods(request):
            outputs[method] = await self.call_user(self._run, method, features)
        return InferenceResponse(outputs)

    def _run(self, method: str, features: Array) -> Array:
        try:
            return self.estimator.run(method, features)
        except (ValueError, TypeError) as exc:  # what the libraries raise for inputs they cannot take
            raise InvalidInput(f"model '{self.name}' cannot {method} these inputs: {_line(exc)}") from None

    def methods(self, request: InferenceRequest) -> list[str]:
        """The methods the request asks for (its outputs, else its ``method`` parameter)."""
        known = self.estimator.methods
        if request.outputs:
            return [wanted.name for wanted in request.outputs]  # the data plane checked the names
        method = request.parameters.get(METHOD_PARAMETER) or self.default_method or known[0]
        if method not in known:
            raise InvalidInput(f"model '{self.name}' has no method {method!r}; it has {list(known)}")
        return [str(method)]

    def _ordered(self, request: InferenceRequest) -> dict[str, Array]:
        """Inputs named after every column of the model's signature, in its order; else as sent."""
        columns = _columns(self.estimator)
        if len(request.inputs) > 1 and set(request.inputs) == set(columns):
            return {name: request.inputs[name] for name in columns}
        return dict(request.inputs)

    def features(self, request: InferenceRequest) -> Array:
        """The feature matrix of the request's inputs."""
        arrays = list(self._ordered(request).values())
        if not arrays:
            raise InvalidInput(f"model '{self.name}' needs an input (a matrix of rows by features)")
        if len(arrays) == 1:
            matrix = arrays[0]
            if matrix.ndim == 1:
                matrix = matrix.reshape(1, -1)
        else:
            if any(array.ndim > 2 or (array.ndim == 2 and array.shape[1] != 1) for array in arrays):
                raise InvalidInput(
                    "several inputs are the columns of one matrix: each must be [rows] or [rows, 1]"
                )
            if len({array.shape[0] if array.ndim else 1 for array in arrays}) > 1:
                raise InvalidInput(
                    "several inputs are the columns of one matrix: they must have as many rows"
                )
            matrix = np.column_stack([array.reshape(-1) for array in arrays])
        if matrix.ndim != 2:
            raise InvalidInput(
                f"model '{self.name}' takes a matrix of rows by features; the input has shape "
                f"{list(matrix.shape)}"
            )
        expected = self.estimator.n_features
        if expected is not None and matrix.shape[1] != expected:
            raise InvalidInput(
                f"model '{self.name}' takes {expected} features per row; the input has {matrix.shape[1]}"
            )
        return _typed(matrix, self.estimator.numeric_only, self.name)


def _columns(estimator: Estimator) -> list[str]:
    """The column names an MLflow model's signature gives its inputs, in their order."""
    declared: tuple[TensorSpec, ...] = getattr(estimator, "signature_inputs", ())
    return [spec.name for spec in declared]


def _typed(matrix: Array, numeric_only: bool, name: str) -> Array:
    """Text (BYTES) as ``str``; numbers as they are; text refused where only numbers are taken."""
    if matrix.dtype.kind in "biuf":
        return matrix
    if numeric_only:
        raise InvalidInput(f"model '{name}' takes numbers; the input holds {matrix.dtype.kind!r} values")
    if matrix.dtype == object:
        texts: Array = np.vectorize(_text, otypes=[object])(matrix)
        return texts
    return matrix


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]
