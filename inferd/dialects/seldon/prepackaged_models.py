"""Seldon's TENSORFLOW_SERVER and MLFLOW_SERVER, run in-process as the Seldon components Seldon's
images make of them (the other prepackaged servers are in `inferd.dialects.seldon.prepackaged`).

``TENSORFLOW_SERVER`` is Seldon's proxy in front of TF Serving: ``predict(X)`` sends ``X``'s rows
as ``instances`` to the model's signature (``signature_name``, default ``serving_default``) and
answers TF Serving's ``predictions``. Here the SavedModel of ``model_uri`` (TF Serving's layout:
the highest numeric version folder) runs in-process: ``X`` is the signature's one input (or the one
``model_input`` names), the answer its one output (or the one ``model_output`` names; a signature
of several outputs with none named answers them all as an object of arrays, Seldon's jsonData).

``MLFLOW_SERVER`` is Seldon's ``MLFlowServer``: the MLflow model of ``model_uri`` (an ``MLmodel``
folder of the pyfunc flavour, its environment listed and not installed), ``predict(X,
feature_names)`` answering the model's ``predict``; an ``mlflow.sklearn`` model is read without
MLflow (`inferd.dialects.frameworks.mlflow`), any other through MLflow's pyfunc with ``X`` as a
DataFrame of ``feature_names`` as Seldon's class builds it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput, ModelLoadError
from inferd.dialects.frameworks.savedmodel import SERVING_TAG, find_saved_model, ports, signature_defs
from inferd.dialects.seldon.prepackaged import Prepackaged

DEFAULT_SIGNATURE = "serving_default"


class TensorflowServer(Prepackaged):
    """Seldon's TENSORFLOW_SERVER."""

    def __init__(
        self,
        model_uri: str | None = None,
        signature_name: str = DEFAULT_SIGNATURE,
        model_name: str = "",
        model_input: str = "",
        model_output: str = "",
        **_: Any,  # rest_endpoint, grpc_endpoint...: where Seldon's proxy reached TF Serving
    ) -> None:
        super().__init__(model_uri)
        self.signature_name, self.model_input, self.model_output = signature_name, model_input, model_output

    def load(self) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            import tensorflow as tf
        except ImportError:
            raise ModelLoadError(
                "TENSORFLOW_SERVER needs TensorFlow: pip install 'inferd[tensorflow]'"
            ) from None
        folder = find_saved_model(self.folder)
        definitions = signature_defs(folder)
        if self.signature_name not in definitions:
            raise ModelLoadError(
                f"TENSORFLOW_SERVER: {folder} has no signature {self.signature_name!r} (it has "
                f"{sorted(definitions)}); set the signature_name parameter"
            )
        self.inputs = ports(definitions[self.signature_name].inputs)
        self.outputs = ports(definitions[self.signature_name].outputs)
        for name, found, kind in (
            (self.model_input, self.inputs, "input"),
            (self.model_output, self.outputs, "output"),
        ):
            if name and name not in found:
                raise ModelLoadError(
                    f"TENSORFLOW_SERVER: the signature has no {kind} {name!r} (it has {sorted(found)})"
                )
        if not self.model_input and len(self.inputs) != 1:
            raise ModelLoadError(
                f"TENSORFLOW_SERVER: the signature has the inputs {sorted(self.inputs)}; name the one X "
                "is with the model_input parameter"
            )
        self.input = self.model_input or next(iter(self.inputs))
        self.loaded = tf.saved_model.load(str(folder), tags=[SERVING_TAG])
        self.function = self.loaded.signatures[self.signature_name]
        self.constant = tf.constant

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        import tensorflow as tf

        port = self.inputs[self.input]
        try:
            fed = np.asarray(X, dtype=port.numpy)
            found = self.function(**{self.input: self.constant(fed)})
        except (tf.errors.InvalidArgumentError, ValueError, TypeError) as exc:
            raise InvalidInput(f"TENSORFLOW_SERVER: {' '.join(str(exc).split())[:500]}") from None
        outputs = {name: tensor.numpy() for name, tensor in found.items()}
        if self.model_output:
            return outputs[self.model_output]
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return {name: _plain(value) for name, value in sorted(outputs.items())}


class MLFlowServer(Prepackaged):
    """Seldon's MLFLOW_SERVER."""

    def __init__(self, model_uri: str | None = None, **_: Any) -> None:  # xtype...: Seldon's, unused
        super().__init__(model_uri)

    def load(self) -> None:
        from inferd.dialects.frameworks.mlflow import load_python_model

        self.model, self.plain = load_python_model(self.folder)

    def predict(self, X: Any, feature_names: Any = None, meta: Any = None) -> Any:
        if self.plain:  # an mlflow.sklearn estimator: what its pyfunc wrapper calls
            return self.model.predict(np.asarray(X))
        import pandas  # type: ignore[import-untyped]

        columns = list(feature_names) if feature_names else None
        return self.model.predict(pandas.DataFrame(data=X, columns=columns))


def _plain(value: Any) -> Any:
    """An output as JSON takes it (TensorFlow's strings are bytes)."""
    if value.dtype.kind in "OS":
        return [
            item.decode("utf-8", "replace") if isinstance(item, bytes) else item for item in value.ravel()
        ]
    return value.tolist()
