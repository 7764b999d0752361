"""LightGBM Boosters (``model.bst``, ``model.txt``), as MLServer's ``mlserver_lightgbm.LightGBMModel``
and KServe's lgbserver serve them: ``predict`` answers what the Booster predicts (a classifier's
class probabilities, a regressor's values); a classifier also answers ``predict_proba`` (rows by
classes, a binary one's two columns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.types import Array, TensorSpec


def load(path: Path) -> LightGBMEstimator:
    import lightgbm

    return LightGBMEstimator(lightgbm.Booster(model_file=str(path)))


class LightGBMEstimator:
    platform = "lightgbm"
    input_datatype = "FP64"
    numeric_only = True

    def __init__(self, booster: Any) -> None:
        self.booster = booster
        self.n_features: int | None = int(booster.num_feature()) or None
        objective = str(booster.params.get("objective") or "")  # LightGBM 4 reads the file's parameters
        self.objective = objective.split()[0] if objective else ""
        self.n_classes = int(booster.num_model_per_iteration())
        classifier = self.objective in ("binary", "multiclass", "softmax", "multiclassova", "cross_entropy")
        self.methods = ("predict", "predict_proba") if classifier else ("predict",)

    def run(self, method: str, features: Array) -> Array:
        raw = np.asarray(self.booster.predict(features))
        if method == "predict_proba" and raw.ndim == 1:
            return np.column_stack([1 - raw, raw])
        return raw

    def output(self, method: str) -> TensorSpec:
        if method == "predict_proba":
            return TensorSpec(method, "FP64", (-1, max(self.n_classes, 2)))
        return TensorSpec(method, "FP64", (-1,) if self.n_classes == 1 else (-1, self.n_classes))
