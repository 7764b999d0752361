"""The bundled example: a scikit-learn classifier of iris flowers, served as a native inferd model.

It loads ``model.joblib`` beside this file when present (``python examples/iris/train.py`` writes
it) and otherwise trains in a fraction of a second on the iris data that ships inside scikit-learn,
so nothing is ever downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import inferd
from inferd import TensorSpec

HERE = Path(__file__).parent


def train() -> object:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, labels = load_iris(return_X_y=True)
    return LogisticRegression(max_iter=1000).fit(features, labels)


class Iris(inferd.Model):
    inputs = (TensorSpec("input-0", "FP32", (-1, 4)),)
    outputs = (TensorSpec("label", "INT64", (-1,)), TensorSpec("probabilities", "FP32", (-1, 3)))

    def load(self) -> None:
        import joblib

        saved = HERE / "model.joblib"
        self.classifier = joblib.load(saved) if saved.exists() else train()

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # One pass through the classifier: the label is the most probable class.
        probabilities = self.classifier.predict_proba(inputs["input-0"])
        labels = self.classifier.classes_[probabilities.argmax(axis=1)]
        return {"label": labels.astype(np.int64), "probabilities": probabilities.astype(np.float32)}
