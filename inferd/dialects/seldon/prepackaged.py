"""Seldon's prepackaged servers that inferd runs itself, as the Seldon components they are.

Seldon Core serves a graph node with ``implementation: SKLEARN_SERVER`` and a ``modelUri`` by running
its ``seldonio/sklearnserver`` image: ``SKLearnServer(model_uri, method)`` behind
``seldon-core-microservice``, the operator passing the model's folder as the ``model_uri`` parameter
and the node's ``parameters`` (``method``) beside it. `SKLearnServer` here does what that class does,
so its answers are the same: ``model.joblib`` of the folder, loaded with joblib, answering ``predict``
with the estimator's ``predict_proba`` (by default), ``decision_function`` or, for any other method,
``predict``; no class names (Seldon names the columns ``t:0``, ``t:1``...); ``metadata.yaml`` of the
folder as its metadata, when it has one.

``XGBOOST_SERVER`` and ``LIGHTGBM_SERVER`` are `XGBoostServer` and `LightGBMServer`: the folder's
``model.bst`` read as a Booster, ``predict`` answering what the Booster predicts, as Seldon's
classes of those names do (``inferd serve`` of a model file answers class labels for XGBoost
classifiers instead, as MLServer does: docs/runtimes.md).

It is reached two ways: by a graph node (the graph dialect fetches the ``modelUri`` and names this
class: `inferd.protocols.seldon.prepackaged`), and by ``inferd serve
inferd.dialects.seldon.prepackaged.SKLearnServer --dialect seldon --parameters '[{"name":
"model_uri", "value": "s3://...", "type": "STRING"}]'``, where the dialect fetches ``model_uri``
(`fetched`) before the class is built, as Seldon's storage initializer does before its server starts.

One difference: Seldon's server logs an estimator's error and answers nothing in its place; here the
error is the request's (a Seldon 500 naming it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from inferd.core.errors import ModelLoadError
from inferd.storage.cache import ModelCache
from inferd.storage.locations import local_path

logger = logging.getLogger("inferd.seldon")

JOBLIB_FILE = "model.joblib"
#: The file Seldon's XGBOOST_SERVER and LIGHTGBM_SERVER read from the model's folder.
BOOSTER_FILE = "model.bst"
METADATA_FILE = "metadata.yaml"


class Prepackaged:
    """A prepackaged server: its ``model_uri`` parameter is a folder fetched before it is built."""

    def __init__(self, model_uri: str | None = None) -> None:
        if not model_uri:
            raise ModelLoadError(f"{type(self).__name__} needs the model_uri parameter (the model's folder)")
        self.model_uri = model_uri

    @property
    def folder(self) -> Path:
        return local_path(self.model_uri) or Path(self.model_uri)

    def init_metadata(self) -> dict[str, Any]:
        """``metadata.yaml`` of the model's folder; none (an empty one) when it is absent or not a
        YAML mapping, as Seldon's servers have it."""
        path = self.folder / METADATA_FILE
        try:
            found = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            logger.error("metadata file %s cannot be read as YAML: %s", path, exc)
            return {}
        return found if isinstance(found, dict) else {}


class SKLearnServer(Prepackaged):
    """Seldon's SKLEARN_SERVER: a scikit-learn estimator saved with joblib as ``model.joblib``."""

    def __init__(self, model_uri: str | None = None, method: str = "predict_proba") -> None:
        super().__init__(model_uri)
        self.method = method

    def load(self) -> None:
        try:
            import joblib
        except ImportError:
            raise ModelLoadError("SKLEARN_SERVER needs scikit-learn: pip install scikit-learn") from None
        path = self.folder / JOBLIB_FILE
        if not path.is_file():
            raise ModelLoadError(f"SKLEARN_SERVER: no {JOBLIB_FILE} in {self.model_uri}")
        self.estimator = joblib.load(path)

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        if self.method == "predict_proba":
            return self.estimator.predict_proba(X)
        if self.method == "decision_function":
            return self.estimator.decision_function(X)
        return self.estimator.predict(X)


class BoosterServer(Prepackaged):
    """Seldon's XGBOOST_SERVER and LIGHTGBM_SERVER: a Booster saved as ``model.bst`` in the folder,
    answering ``predict`` with what the Booster predicts (a classifier's probabilities), as Seldon's
    ``XGBoostServer`` and ``LightGBMServer`` do."""

    implementation = ""
    library = ""

    def load(self) -> None:
        path = self.folder / BOOSTER_FILE
        if not path.is_file():
            raise ModelLoadError(f"{self.implementation}: no {BOOSTER_FILE} in {self.model_uri}")
        try:
            self.booster = self.read(path)
        except ImportError:
            raise ModelLoadError(
                f"{self.implementation} needs {self.library}: pip install 'inferd[{self.library}]'"
            ) from None

    def read(self, path: Path) -> Any:
        raise NotImplementedError

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        return self.booster.predict(X)


class XGBoostServer(BoosterServer):
    """Seldon's XGBOOST_SERVER."""

    implementation, library = "XGBOOST_SERVER", "xgboost"

    def read(self, path: Path) -> Any:
        import xgboost

        self.matrix = xgboost.DMatrix
        return xgboost.Booster(model_file=str(path))

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        return self.booster.predict(self.matrix(X))


class LightGBMServer(BoosterServer):
    """Seldon's LIGHTGBM_SERVER."""

    implementation, library = "LIGHTGBM_SERVER", "lightgbm"

    def read(self, path: Path) -> Any:
        import lightgbm

        return lightgbm.Booster(model_file=str(path))


def fetched(user_class: type, parameters: dict[str, Any], cache: ModelCache) -> dict[str, Any]:
    """``parameters`` with a prepackaged server's ``model_uri`` in object storage replaced by its
    copy in ``cache``; any other class's as they are."""
    uri = parameters.get("model_uri")
    if not issubclass(user_class, Prepackaged) or not isinstance(uri, str) or local_path(uri) is not None:
        return parameters
    return {**parameters, "model_uri": str(cache.fetch(uri).path)}
