"""The ``cortex.yaml`` of Cortex 0.12-0.35: APIs whose ``predictor:`` block names a predictor class.

Kept apart from `config` (the 0.8-0.10 layouts) because these releases changed the resource shape
three times while keeping one ``predictor:`` block:

- 0.12: ``kind: api`` next to an optional ``kind: deployment``, ``endpoint`` at the top level;
- 0.13-0.19: a list of APIs with no ``kind`` (``endpoint`` at the top level; ``kind: SyncAPI`` late on);
- 0.20-0.35: ``kind: RealtimeAPI`` (``BatchAPI``, ``TaskAPI``, ``AsyncAPI``, ``TrafficSplitter`` next to
  it), ``networking.endpoint``.

The predictor block: ``type`` (``python``, ``onnx``, ``tensorflow``), ``path`` to the file holding the
class, its model (``model`` until 0.17, ``model_path`` after, or ``models``), ``signature_key``,
``config`` (the constructor's dict), ``python_path``, ``env``. Fields that only concerned Cortex's
cluster (images, processes and threads per replica, server-side batching) are logged and ignored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferd.dialects.cortex.config_fields import _error, _handler, _model
from inferd.dialects.cortex.models_dir import models_in_dir

logger = logging.getLogger("inferd.cortex")

#: The predictor class each ``type`` names, as Cortex looked it up in the file.
CLASS_NAMES = {"python": "PythonPredictor", "onnx": "ONNXPredictor", "tensorflow": "TensorFlowPredictor"}
#: Kinds of 0.19+ resources served as a synchronous API.
REALTIME_KINDS = ("SyncAPI", "RealtimeAPI")
#: Kinds of 0.20+ resources inferd recognises but does not serve yet, with the release that added them.
OTHER_KINDS = {
    "BatchAPI": "0.20",
    "TaskAPI": "0.30",
    "AsyncAPI": "0.35",
    "TrafficSplitter": "0.23",
    "APISplitter": "0.20",
}
#: Predictor fields with no serving meaning outside Cortex's cluster: accepted, logged, ignored.
IGNORED = (
    "image",
    "tensorflow_serving_image",
    "processes_per_replica",
    "threads_per_process",
    "server_side_batching",
    "shm_size",
    "log_level",
    "dependencies",
)
#: ``models`` fields about Cortex's model cache: accepted and ignored (inferd loads every listed model).
MODELS_IGNORED = ("cache_size", "disk_cache_size")
KNOWN = (
    "type",
    "path",
    "model",
    "model_path",
    "models",
    "signature_key",
    "config",
    "python_path",
    "env",
    *IGNORED,
)


def is_class_resource(item: Any) -> bool:
    """Whether ``item`` is an API (or another resource) of the 0.12-0.35 layouts."""
    if not isinstance(item, dict):
        return False
    kind = item.get("kind")
    if kind in REALTIME_KINDS or kind in OTHER_KINDS:
        return True
    if kind not in (None, "api"):
        return False
    block = item.get("predictor") if "predictor" in item else item.get("handler")
    return isinstance(block, dict) and "type" in block


def release_of(item: dict[str, Any]) -> str:
    """The Cortex releases whose layout ``item`` follows, for messages."""
    kind = item.get("kind")
    if kind == "api":
        return "0.12"
    if kind is None:
        return "0.13-0.19"
    if kind == "SyncAPI":
        return "0.19"
    return "0.20-0.35"


def class_fields(name: str, item: dict[str, Any], project: Path) -> dict[str, Any]:
    """The `ApiConfig` fields of one API of these layouts (endpoint and name aside)."""
    release = release_of(item)
    kind = item.get("kind")
    if kind in OTHER_KINDS:
        raise _error(
            name,
            f"kind: {kind} (Cortex {OTHER_KINDS[kind]}+) is not supported yet; "
            f"inferd serves {' and '.join(REALTIME_KINDS)} resources",
        )
    section = "handler" if "handler" in item and "predictor" not in item else "predictor"
    block = item.get(section)
    if not isinstance(block, dict):
        raise _error(name, f"{section}: expected a mapping")
    kind_of = block.get("type")
    if section == "handler":
        release = "0.34-0.35"
        if kind_of not in ("python", "tensorflow"):
            raise _error(name, f"handler: type: must be python or tensorflow, found {kind_of!r}")
    elif kind_of not in CLASS_NAMES:
        raise _error(name, f"predictor: type: must be python, tensorflow or onnx, found {kind_of!r}")
    known = (*KNOWN, "multi_model_reloading") if section == "handler" else KNOWN
    for key in block:
        if key not in known:
            raise _error(name, f"{section}: {key}: key is not supported (Cortex {release} layout)")
        if key in IGNORED:
            logger.info("api %s: %s: %s is ignored: inferd runs the %s itself", name, section, key, section)
    path = block.get("path")
    if not isinstance(path, str) or not path:
        raise _error(name, f"{section}: path: key is required")
    config = block.get("config") or {}
    if not isinstance(config, dict):
        raise _error(name, f"{section}: config: expected a mapping")
    env = block.get("env") or {}
    if not isinstance(env, dict):
        raise _error(name, f"{section}: env: expected a mapping")
    if section == "handler":
        block = _handler_models(name, block)
    python_path = block.get("python_path")
    model = _model_of(name, block, kind_of, project)
    signature_key = block.get("signature_key")
    if signature_key is not None and kind_of != "tensorflow":
        raise _error(name, "predictor: signature_key: key is only valid for the tensorflow predictor type")
    fields: dict[str, Any] = {
        "format": "class",
        "predictor_type": kind_of,
        "handler_class": section == "handler",
        "release": release,
        "metadata": config,
        "env": {**dot_env(project), **{str(key): str(value) for key, value in env.items()}},
        "python_path": (project / python_path).resolve() if python_path else None,
        "signature_key": signature_key,
        **_handler(name, path, project),
    }
    if isinstance(model, str):
        fields.update(_model(model, project))
    elif model is not None:
        fields["named_models"] = tuple(
            NamedModel(entry["name"], signature_key=entry["signature_key"], **_model(entry["path"], project))
            for entry in model
        )
    return fields


def dot_env(project: Path) -> dict[str, str]:
    """The ``.env`` file at the project's root (0.19+): ``VARIABLE=value`` lines, exported before the
    predictor loads; the ``env`` of cortex.yaml wins over it."""
    path = project / ".env"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.removeprefix("export ").split("=", 1)
            found[key.strip()] = value.strip().strip("'\"")
    return found


def _handler_models(name: str, block: dict[str, Any]) -> dict[str, Any]:
    """A 0.34-0.35 handler block with its models (``models`` for TensorFlow, ``multi_model_reloading``
    for Python: ``path`` for one model, ``paths`` for several) as the predictor block wrote them."""
    models = block.get("models") if block.get("models") is not None else block.get("multi_model_reloading")
    rest = {key: value for key, value in block.items() if key not in ("models", "multi_model_reloading")}
    if models is None:
        return rest
    if not isinstance(models, dict):
        raise _error(name, "handler: models: expected a mapping")
    if models.get("path") is not None:
        return {**rest, "model_path": models["path"], "signature_key": models.get("signature_key")}
    return {**rest, "models": {key: value for key, value in models.items() if key != "path"}}


@dataclass(frozen=True)
class NamedModel:
    """One model of a multi-model API (``models.paths`` / a ``models`` list): its name, where it is (a
    local path, or a storage URI start-up fetches) and, for TensorFlow, its signature key."""

    name: str
    model: Path | None = None
    model_uri: str | None = None
    signature_key: str | None = None


def _model_of(
    name: str, block: dict[str, Any], kind: str, project: Path
) -> str | list[dict[str, Any]] | None:
    """The API's model: ``model`` (0.12-0.17) or ``model_path`` (0.18+), one path; or ``models``, a list
    of entries (0.18-0.19) or a block with ``paths`` or ``dir`` (0.20+), several named models."""
    given = [key for key in ("model", "model_path", "models") if block.get(key) is not None]
    if len(given) > 1:
        raise _error(name, f"predictor: only one of {', '.join(given)} may be given")
    if not given:
        if kind != "python":
            raise _error(name, f"predictor: model_path: key is required for the {kind} predictor type")
        return None
    value = block[given[0]]
    if given[0] != "models":
        if not isinstance(value, str) or not value:
            raise _error(name, f"predictor: {given[0]}: expected a path")
        return value
    if isinstance(value, dict):
        unknown = [key for key in value if key not in ("paths", "dir", "signature_key", *MODELS_IGNORED)]
        if unknown:
            raise _error(name, f"predictor: models: {unknown[0]}: key is not supported")
        if value.get("dir") is not None:
            if value.get("paths") is not None:
                raise _error(name, "predictor: models: only one of paths, dir may be given")
            return models_in_dir(name, value["dir"], value.get("signature_key"), project)
    entries = value.get("paths") if isinstance(value, dict) else value
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise _error(name, "predictor: models: paths: expected a list of {name, model_path}")
    default_key = value.get("signature_key") if isinstance(value, dict) else None
    found = []
    for entry in entries:
        model_name, path = entry.get("name"), entry.get("model_path")
        if not isinstance(model_name, str) or not model_name:
            raise _error(name, "predictor: models: name: key is required")
        if not isinstance(path, str) or not path:
            raise _error(name, f"predictor: models: {model_name}: model_path: key is required")
        found.append(
            {"name": model_name, "path": path, "signature_key": entry.get("signature_key") or default_key}
        )
    names = [entry["name"] for entry in found]
    if len(set(names)) != len(names):
        raise _error(name, "predictor: models: each model needs a name of its own")
    return found
