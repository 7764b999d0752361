"""Real model files of each format, built here from small data (no downloads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_iris

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def iris() -> tuple[Any, Any]:
    features, labels = load_iris(return_X_y=True)
    return features, labels


def write_sklearn(folder: Path) -> Any:
    import joblib
    from sklearn.linear_model import LogisticRegression

    features, labels = iris()
    estimator = LogisticRegression(max_iter=300).fit(features, labels)
    folder.mkdir(parents=True, exist_ok=True)
    joblib.dump(estimator, folder / "model.joblib")
    return estimator


def write_xgboost(path: Path) -> Any:
    import xgboost

    features, labels = iris()
    booster = xgboost.train(
        {"objective": "multi:softprob", "num_class": 3, "nthread": 1},
        xgboost.DMatrix(features, label=labels),
        num_boost_round=4,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(path))
    return booster


def write_lightgbm(path: Path) -> Any:
    import lightgbm

    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 3))
    target = features @ np.array([1.0, -2.0, 0.5])
    booster = lightgbm.train(
        {"objective": "regression", "verbose": -1, "num_threads": 1},
        lightgbm.Dataset(features, label=target),
        num_boost_round=5,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(path))
    return booster


def write_onnx(path: Path) -> None:
    from skl2onnx import to_onnx
    from sklearn.tree import DecisionTreeClassifier

    features, labels = iris()
    estimator = DecisionTreeClassifier(max_depth=3, random_state=0).fit(features, labels)
    model = to_onnx(estimator, features[:1].astype(np.float32), options={"zipmap": False})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())


def mlserver(folder: Path, implementation: str, uri: str) -> None:
    settings = {"name": folder.name, "implementation": implementation, "parameters": {"uri": uri}}
    (folder / "model-settings.json").write_text(json.dumps(settings))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of model folders: ``iris`` (scikit-learn, bare), ``xgb`` and ``lgb`` (MLServer's
    model-settings.json naming the file), ``tree`` (a bare ONNX file), ``lgbbst`` (LightGBM saved as
    the ambiguous ``model.bst``)."""
    root = tmp_path_factory.mktemp("models")
    write_sklearn(root / "iris")
    write_xgboost(root / "xgb" / "booster.json")
    mlserver(root / "xgb", "mlserver_xgboost.XGBoostModel", "./booster.json")
    write_lightgbm(root / "lgb" / "model.txt")
    mlserver(root / "lgb", "mlserver_lightgbm.LightGBMModel", "model.txt")
    write_onnx(root / "tree" / "model.onnx")
    write_lightgbm(root / "lgbbst" / "model.bst")
    return root
