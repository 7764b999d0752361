"""A model folder's settings file, read into inferd's keys: its ``inferd.yaml`` (the keys of every
dialect's settings, plus ``dialect`` and ``versions``), else MLServer's ``model-settings.json`` (the
fields that map: ``name``, ``implementation``, ``parameters.uri``, ``parameters.version``,
``max_batch_size``, ``max_batch_time``), else Triton's ``config.pbtxt`` (an ONNX or SavedModel model:
`from_triton`). The config layer reads projects' ``inferd.yaml``; a dialect
may not import it, so the little reading a model folder needs is here."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from inferd.dialects.frameworks.triton import CONFIG_FILE, ConfigError, read_config
from inferd.dialects.frameworks.triton import FORMATS as TRITON_FORMATS

logger = logging.getLogger("inferd.repository")

SETTINGS_FILE = "inferd.yaml"
MLSERVER_FILE = "model-settings.json"
#: Keys of a settings file besides a dialect's settings fields.
REPOSITORY_KEYS = frozenset({"dialect", "versions"})
#: MLServer's runtimes that inferd's model-file runtimes serve (docs/runtimes.md): implementation →
#: the format of the file ``parameters.uri`` names (the folder's well-known file when it names none).
MLSERVER_RUNTIMES = {
    "mlserver_sklearn.SKLearnModel": "sklearn",
    "mlserver_xgboost.XGBoostModel": "xgboost",
    "mlserver_lightgbm.LightGBMModel": "lightgbm",
    "mlserver_mlflow.MLflowRuntime": "mlflow",
}
#: MLServer's fields that have an inferd meaning; others (``platform``, ``inputs``...) are ignored.
MLSERVER_MAPPED = frozenset({"name", "implementation", "parameters", "max_batch_size", "max_batch_time"})


class FolderProblem(Exception):
    """Why a model folder cannot be served; the caller adds the model's name and folder."""


def read_settings(folder: Path) -> dict[str, Any] | None:
    """The settings of ``folder`` as inferd keys (its ``inferd.yaml``, else its
    ``model-settings.json``), or None when it has neither."""
    path = folder / SETTINGS_FILE
    if path.is_file():
        return _read_yaml(path)
    path = folder / MLSERVER_FILE
    if path.is_file():
        return from_mlserver(_read_json(path))
    if (folder / CONFIG_FILE).is_file():
        return from_triton(folder)
    return None


def from_triton(folder: Path) -> dict[str, Any]:
    """Triton's ``config.pbtxt`` as inferd keys: an ONNX or SavedModel model in each version folder
    (``1/model.onnx``, ``1/model.savedmodel/``, or ``default_model_filename``) served by the
    model-file runtimes with the inputs and outputs the config declares; its version policy."""
    try:
        config = read_config(folder)
    except ConfigError as exc:
        raise FolderProblem(str(exc)) from None
    found = config.model_format()
    if found is None:
        served = ", ".join(sorted(TRITON_FORMATS))
        raise FolderProblem(
            f"{CONFIG_FILE}: {'platform' if config.platform else 'backend'} {config.kind or '(none)'!r} "
            f"is a Triton backend inferd cannot run (it serves {served})"
        )
    keys: dict[str, Any] = {
        "dialect": "runtimes",
        "model_format": found[0],
        "target": found[1],
        "triton_config": str((folder / CONFIG_FILE).resolve()),
    }
    if config.name:
        keys["name"] = config.name
    if config.versions is not None:
        keys["versions"] = config.versions
    return keys


def is_mlserver(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` is MLServer's model settings rather than inferd's keys."""
    return "implementation" in config or "parameters" in config


def from_mlserver(document: Mapping[str, Any]) -> dict[str, Any]:
    """MLServer's model settings as inferd keys: its scikit-learn, XGBoost and LightGBM runtimes are
    inferd's model-file runtimes (`MLSERVER_RUNTIMES`); another MLServer runtime is a problem (the
    folder must give inferd code, or a target inferd serves)."""
    found: dict[str, Any] = {}
    parameters = document.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        raise FolderProblem(f"{MLSERVER_FILE}: 'parameters' must be an object")
    if document.get("name"):
        found["name"] = str(document["name"])
    implementation = document.get("implementation")
    if implementation in MLSERVER_RUNTIMES:
        found["dialect"], found["model_format"] = "runtimes", MLSERVER_RUNTIMES[str(implementation)]
        found["target"] = str(parameters.get("uri") or ".")
    elif implementation:
        found["target"] = implementation_target(str(implementation))
    elif parameters.get("uri"):
        found["target"] = str(parameters["uri"])
    if parameters.get("version") is not None:
        found["model_version"] = str(parameters["version"])
    if document.get("max_batch_size") is not None:
        found["max_batch_size"] = document["max_batch_size"]
    if document.get("max_batch_time") is not None:
        found["max_batch_time_ms"] = float(document["max_batch_time"]) * 1000
    ignored = sorted(set(document) - MLSERVER_MAPPED)
    if ignored:
        logger.warning("%s: fields %s have no meaning to inferd and are ignored", MLSERVER_FILE, ignored)
    return found


def implementation_target(implementation: str) -> str:
    """MLServer's dotted ``module.Class`` as inferd's ``module:Class`` (``file.py:Class`` and
    ``module:Class`` as they are); MLServer's other runtimes are refused, saying what to give instead."""
    module = implementation.partition(":")[0]
    if module.split(".")[0].startswith("mlserver"):
        raise FolderProblem(
            f"implementation {implementation!r} is an MLServer runtime inferd cannot run (it runs "
            f"{', '.join(sorted(MLSERVER_RUNTIMES))} as its own runtimes, docs/runtimes.md); give "
            "inferd code instead (implementation: model.py:MyModel, a subclass of inferd.Model or a "
            "class of another dialect), or parameters.uri naming what inferd serves (a cortex.yaml, a "
            "model folder)"
        )
    if ":" in implementation or "." not in implementation:
        return implementation
    module, _, name = implementation.rpartition(".")
    return f"{module}:{name}"


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        found = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FolderProblem(f"{SETTINGS_FILE} is not readable YAML: {_one_line(exc)}") from None
    if not isinstance(found, dict) or not all(isinstance(key, str) for key in found):
        raise FolderProblem(f"{SETTINGS_FILE} must be a mapping of settings")
    return found


def _read_json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FolderProblem(f"{MLSERVER_FILE} is not readable JSON: {_one_line(exc)}") from None
    if not isinstance(found, dict):
        raise FolderProblem(f"{MLSERVER_FILE} must be a JSON object")
    return found


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
