"""A folder as Seldon's SKLEARN_SERVER reads it: ``model.joblib``, a scikit-learn classifier fitted
on the iris data that ships with scikit-learn (nothing downloaded), and the classifier itself, so a
test compares the server's answers with the estimator's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Two iris flowers of different species.
ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def sklearn_model_folder(folder: Path) -> Any:
    """Write ``folder/model.joblib``; return the fitted classifier."""
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, labels = load_iris(return_X_y=True)
    classifier = LogisticRegression(max_iter=1000).fit(features, labels)
    folder.mkdir(parents=True, exist_ok=True)
    joblib.dump(classifier, folder / "model.joblib")
    return classifier
