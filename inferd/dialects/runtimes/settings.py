"""The model-file runtimes' own settings (besides what every dialect reads)."""

from __future__ import annotations

from typing import Literal

from inferd.core.settings import DialectSettings

Format = Literal["sklearn", "xgboost", "lightgbm", "onnx", "tensorflow", "mlflow"]


class RuntimeSettings(DialectSettings):
    """Which format a model file is in, and which of its methods answers by default."""

    model_format: Format | None = None
    """The format of the model file a model-file runtime serves (``sklearn``, ``xgboost``,
    ``lightgbm``, ``onnx``, ``tensorflow``, ``mlflow``). Unset: told by the file's name, and a
    ``model.bst`` (XGBoost's or LightGBM's) is tried with each library in turn. See docs/runtimes.md."""

    predict_method: str | None = None
    """The method of a scikit-learn, XGBoost or LightGBM model that answers a request naming none
    (``predict``, ``predict_proba``, ``decision_function``, ``transform``): the output of that
    name. A request chooses another with its ``method`` parameter or the outputs it names. Unset:
    ``predict``."""

    signature_key: str | None = None
    """The signature of a TensorFlow SavedModel that a model-file runtime serves (its inputs and
    outputs are the model's). Unset: ``serving_default``, else the model's only signature. See
    docs/runtimes.md."""

    triton_config: str | None = None
    """A Triton ``config.pbtxt`` declaring the inputs and outputs of the ONNX or SavedModel model a
    model-file runtime serves: its metadata and what requests are checked against (each must be the
    model's, of its datatype). The repository sets it for a Triton model folder. Unset: the
    model's own signature."""
