"""MLflow models (a folder holding ``MLmodel``) of the ``python_function`` flavour, as MLServer's
``mlserver_mlflow.MLflowRuntime``, KServe's mlflow format and Seldon's MLFLOW_SERVER serve them
(read by `inferd.dialects.frameworks.mlflow`).

An ``mlflow.sklearn`` model is served as a scikit-learn model file is
(`inferd.dialects.runtimes.sklearn`), its ``predict_fn`` the default method; any other pyfunc model
answers ``predict`` through MLflow. The signature in ``MLmodel`` (column-based or tensor-based) is
the model's metadata; a column-based signature's columns may be sent as named inputs, put in the
signature's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.types import Array, TensorSpec
from inferd.dialects.frameworks.mlflow import PYFUNC, load_python_model, read, signature
from inferd.dialects.runtimes.sklearn import SKLearnEstimator


def load(path: Path) -> Any:
    """The estimator of the MLflow model at ``path`` (its ``MLmodel`` file or its folder)."""
    document = read(path)
    pyfunc = document["flavors"][PYFUNC]
    inputs, outputs = signature(document.get("signature"))
    model, is_sklearn = load_python_model(path)
    estimator: Any
    if is_sklearn:
        estimator = SKLearnEstimator(model)
        methods = estimator.methods
        wanted = pyfunc.get("predict_fn") or "predict"
        if wanted in methods:  # MLflow answers predict_fn: it is the default method
            estimator.methods = (wanted, *(name for name in methods if name != wanted))
    else:
        estimator = PyfuncEstimator(model)
    estimator.signature_inputs, estimator.signature_outputs = inputs, outputs
    estimator.platform = "mlflow"
    return estimator


class PyfuncEstimator:
    """Any other pyfunc model, loaded by MLflow itself, answering ``predict``."""

    platform = "mlflow"
    input_datatype = "FP64"
    numeric_only = False
    methods = ("predict",)
    n_features: int | None = None

    def __init__(self, model: Any) -> None:
        self.model = model
        self.signature_inputs: tuple[TensorSpec, ...] = ()

    def run(self, method: str, features: Array) -> Array:
        columns = [spec.name for spec in self.signature_inputs]
        if columns and len(columns) == features.shape[1] and all(columns):
            import pandas  # type: ignore[import-untyped]

            return np.asarray(self.model.predict(pandas.DataFrame(features, columns=columns)))
        return np.asarray(self.model.predict(features))

    def output(self, method: str) -> TensorSpec:
        return TensorSpec(method, "FP64", (-1,))
