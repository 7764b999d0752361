"""scikit-learn estimators saved with joblib or pickle (``model.joblib``, ``model.pkl``,
``model.pickle``), as MLServer's ``mlserver_sklearn.SKLearnModel`` and KServe's sklearnserver read
them.

A pickle is code: loading one runs whatever it was made to run, with the server's rights. Serve
only files you trust as you would trust a ``model.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.types import Array, TensorSpec, datatype_of

#: The methods served, in the order they are offered (MLServer's outputs, and Seldon's methods).
METHODS = ("predict", "predict_proba", "decision_function", "transform")


def load(path: Path) -> SKLearnEstimator:
    import joblib  # scikit-learn's own dependency: the sklearn extra installs it

    return SKLearnEstimator(joblib.load(path))


class SKLearnEstimator:
    platform = "sklearn"
    input_datatype = "FP64"
    numeric_only = False

    def __init__(self, estimator: Any) -> None:
        methods = tuple(name for name in METHODS if callable(getattr(estimator, name, None)))
        if not methods:
            raise TypeError(f"{type(estimator).__name__} has none of the methods {list(METHODS)}")
        self.estimator, self.methods = estimator, methods
        features = getattr(estimator, "n_features_in_", None)
        self.n_features = features if isinstance(features, int) else None
        classes = getattr(estimator, "classes_", None)
        self.classes: Array | None = np.asarray(classes) if classes is not None else None

    def run(self, method: str, features: Array) -> Array:
        return np.asarray(getattr(self.estimator, method)(features))

    def output(self, method: str) -> TensorSpec:
        classes = self.classes
        if method == "predict":
            datatype = datatype_of(classes) if classes is not None and classes.dtype != object else "FP64"
            return TensorSpec(
                method, "BYTES" if classes is not None and classes.dtype == object else datatype, (-1,)
            )
        if method == "predict_proba" and classes is not None:
            return TensorSpec(method, "FP64", (-1, len(classes)))
        if method == "decision_function" and classes is not None and len(classes) == 2:
            return TensorSpec(method, "FP64", (-1,))
        return TensorSpec(method, "FP64", (-1, -1))
