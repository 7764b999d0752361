"""XGBoost Boosters (``model.bst``, ``model.json``, ``model.ubj``), as MLServer's
``mlserver_xgboost.XGBoostModel`` serves them: ``predict`` answers class labels for a classifier
(the objective ``binary:*`` or ``multi:*``) and values for a regressor, ``predict_proba`` a
classifier's class probabilities (rows by classes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.types import Array, TensorSpec


def load(path: Path) -> XGBoostEstimator:
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(str(path))
    return XGBoostEstimator(booster, xgboost.DMatrix)


class XGBoostEstimator:
    platform = "xgboost"
    input_datatype = "FP32"
    numeric_only = True

    def __init__(self, booster: Any, matrix: Any) -> None:
        self.booster, self.matrix = booster, matrix
        self.n_features: int | None = int(booster.num_features()) or None
        learner = json.loads(booster.save_config())["learner"]
        self.objective = str(learner["objective"]["name"])
        self.n_classes = int(learner["learner_model_param"].get("num_class", "0") or 0)
        probabilities = self.objective in ("binary:logistic", "multi:softprob")
        self.methods = ("predict", "predict_proba") if probabilities else ("predict",)

    def run(self, method: str, features: Array) -> Array:
        raw = np.asarray(self.booster.predict(self.matrix(features)))
        if self.objective == "binary:logistic":
            return (raw > 0.5).astype(np.int64) if method == "predict" else np.column_stack([1 - raw, raw])
        if self.objective == "multi:softprob":
            return raw.argmax(axis=1).astype(np.int64) if method == "predict" else raw
        if self.objective in ("multi:softmax", "binary:hinge"):
            return raw.astype(np.int64)
        return raw

    def output(self, method: str) -> TensorSpec:
        if method == "predict_proba":
            return TensorSpec(method, "FP32", (-1, max(self.n_classes, 2)))
        labels = self.objective in ("binary:logistic", "multi:softprob", "multi:softmax", "binary:hinge")
        return TensorSpec(method, "INT64" if labels else "FP32", (-1,))
