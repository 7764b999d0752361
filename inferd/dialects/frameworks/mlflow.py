"""MLflow models (a folder holding ``MLmodel``) of the ``python_function`` flavour: reading the
MLmodel file, listing (never installing) the model's environment, and loading the model a runtime
calls. Shared by the model-file runtimes (``inferd serve FOLDER``) and Seldon's MLFLOW_SERVER.

A model saved by ``mlflow.sklearn`` (``loader_module: mlflow.sklearn``) is read without MLflow: its
pickle (``pickled_model``, cloudpickle or pickle as ``serialization_format`` says) is the
estimator. Any other loader module needs MLflow itself (``inferd[mlflow]``:
``mlflow.pyfunc.load_model``). A pickle is code: loading one runs whatever it was made to run.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import MissingExtra, ModelLoadError, TargetError
from inferd.core.types import TensorSpec, datatype_of

logger = logging.getLogger("inferd.mlflow")

MLMODEL = "MLmodel"
PYFUNC = "python_function"
SKLEARN_LOADER = "mlflow.sklearn"
#: Files of the model's environment: listed, never installed.
ENVIRONMENT_FILES = ("conda.yaml", "python_env.yaml", "requirements.txt")
#: MLflow's column types → V2 datatypes.
COLUMN_TYPES = {
    "double": "FP64",
    "float": "FP32",
    "long": "INT64",
    "integer": "INT32",
    "boolean": "BOOL",
    "string": "BYTES",
    "binary": "BYTES",
    "datetime": "BYTES",
}


def folder_of(path: Path) -> Path:
    return path.parent if path.name == MLMODEL else path


def read(path: Path) -> dict[str, Any]:
    """The ``MLmodel`` file of ``path`` (the file or its folder), checked to have the pyfunc flavour
    this runtime serves; a TargetError says what is wrong."""
    import yaml

    file = path if path.name == MLMODEL else path / MLMODEL
    try:
        found = yaml.safe_load(file.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TargetError(f"{file}: cannot read as MLflow's MLmodel: {exc}") from None
    flavors = found.get("flavors") if isinstance(found, dict) else None
    if not isinstance(flavors, dict) or not isinstance(flavors.get(PYFUNC), dict):
        named = sorted(flavors) if isinstance(flavors, dict) else []
        raise TargetError(
            f"{file}: an MLflow model is served by its '{PYFUNC}' flavour, which this one lacks "
            f"(it has {named})"
        )
    document: dict[str, Any] = found
    return document


def check(path: Path) -> None:
    """At startup: the MLmodel is readable, and MLflow is installed when its flavour needs it."""
    pyfunc = read(path)["flavors"][PYFUNC]
    if pyfunc.get("loader_module") != SKLEARN_LOADER and importlib.util.find_spec("mlflow") is None:
        raise MissingExtra(
            f"MLflow models of loader module {pyfunc.get('loader_module')!r} need mlflow: "
            "pip install 'inferd[mlflow]'",
            "mlflow",
        )


def load_python_model(path: Path) -> tuple[Any, bool]:
    """The model of the MLflow folder at ``path`` (or its ``MLmodel`` file), with its environment
    listed in the log: an ``mlflow.sklearn`` estimator (True), or MLflow's pyfunc model (False)."""
    folder = folder_of(path)
    document = read(path)
    listed = [name for name in ENVIRONMENT_FILES if (folder / name).is_file()]
    if listed:
        logger.info(
            "%s: its environment (%s) is listed, not installed: install what it names yourself",
            folder,
            ", ".join(listed),
        )
    if document["flavors"][PYFUNC].get("loader_module") == SKLEARN_LOADER:
        return _sklearn(folder, document["flavors"]), True
    try:
        import mlflow.pyfunc
    except ImportError as exc:
        raise ModelLoadError(
            f"{folder}: MLflow's pyfunc cannot load ({exc}): pip install 'inferd[mlflow]'"
        ) from None
    return mlflow.pyfunc.load_model(str(folder)), False


def _sklearn(folder: Path, flavors: dict[str, Any]) -> Any:
    found = flavors.get("sklearn")
    sklearn: dict[str, Any] = found if isinstance(found, dict) else {}
    name = sklearn.get("pickled_model") or flavors[PYFUNC].get("model_path") or "model.pkl"
    file = (folder / str(name)).resolve()
    if folder.resolve() not in file.parents:
        raise ModelLoadError(f"{folder}: the MLmodel names a model file outside its folder: {name}")
    logger.info("loading %s: a pickle runs code of its own; serve only files you trust", file)
    with file.open("rb") as opened:
        if sklearn.get("serialization_format", "cloudpickle") == "cloudpickle":
            import cloudpickle  # type: ignore[import-untyped]

            return cloudpickle.load(opened)
        return pickle.load(opened)  # a pickle is code: docs/runtimes.md


def signature(found: Any) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]:
    """The inputs and outputs the MLmodel's ``signature`` declares (each a JSON list)."""
    if not isinstance(found, dict):
        return (), ()
    return _specs(found.get("inputs"), "input"), _specs(found.get("outputs"), "output")


def _specs(text: Any, prefix: str) -> tuple[TensorSpec, ...]:
    try:
        items = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    specs = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            return ()
        name = str(item.get("name") or f"{prefix}-{index}")
        tensor = item.get("tensor-spec")
        if item.get("type") == "tensor" and isinstance(tensor, dict):
            try:
                datatype = datatype_of(np.empty(0, np.dtype(str(tensor.get("dtype")))))
            except TypeError:
                return ()
            shape = tuple(int(dim) for dim in tensor.get("shape") or (-1,))
            specs.append(TensorSpec(name, datatype, shape))
        elif item.get("type") in COLUMN_TYPES:
            specs.append(TensorSpec(name, COLUMN_TYPES[str(item["type"])], (-1,)))
        else:
            return ()
    return tuple(specs)
