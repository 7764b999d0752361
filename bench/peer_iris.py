"""The iris model as the peers' own apps serve it (``kserve_app.py``, ``bentoml_app.py``,
``ray_app.py``), over the same ``examples/iris/model.joblib`` as every other row.

These apps run in the peers' venvs, where inferd is not installed, so this module does the work of
``examples/iris/model.py`` with numpy and scikit-learn alone: one ``predict_proba`` pass, the label
its argmax, both returned (as inferd and the floor return them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import joblib
import numpy as np

MODEL_PATH = Path(__file__).resolve().parent.parent / "examples" / "iris" / "model.joblib"
NAME = "iris"
DATATYPES = {np.dtype(np.int64): "INT64", np.dtype(np.float32): "FP32"}


def load() -> Any:
    """The fitted classifier."""
    return joblib.load(MODEL_PATH)


def features(shape: Sequence[int], data: Any) -> np.ndarray:
    """A V2 FP32 input tensor's ``data`` (flat or nested) as a float32 array of ``shape``."""
    return np.asarray(data, dtype=np.float32).reshape(shape)


def predict(classifier: Any, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The label and the class probabilities of each row."""
    probabilities = classifier.predict_proba(rows)
    labels = classifier.classes_[probabilities.argmax(axis=1)]
    return {"label": labels.astype(np.int64), "probabilities": probabilities.astype(np.float32)}


def v2_response(outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """A V2 inference response body (JSON-ready) holding ``outputs``."""
    return {
        "model_name": NAME,
        "outputs": [
            {
                "name": name,
                "datatype": DATATYPES[array.dtype],
                "shape": list(array.shape),
                "data": array.ravel().tolist(),
            }
            for name, array in outputs.items()
        ],
    }
