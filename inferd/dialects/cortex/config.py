"""``cortex.yaml`` → a list of `ApiConfig`, for both layouts Cortex used.

0.8/0.9: ``kind: api`` resources with ``model``, ``model_format``, ``request_handler`` at the top level,
next to an optional ``kind: deployment`` naming the deployment. 0.10: one ``onnx:``, ``tensorflow:`` or
``predictor:`` block per API holding ``model``, ``request_handler``, ``python_path`` and ``metadata``.
Errors read like the originals (``api <name>: ...``; the CLI prefixes ``error:``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from inferd.core.errors import TargetError
from inferd.dialects.cortex.config_classes import (
    OTHER_KINDS,
    REALTIME_KINDS,
    NamedModel,
    class_fields,
    is_class_resource,
)
from inferd.dialects.cortex.config_fields import _error, _handler, _model

#: ``class``: a 0.12-0.35 predictor class (`config_classes`); the others are 0.8-0.10 blocks.
Format = Literal["onnx", "tensorflow", "predictor", "class"]
BLOCKS: tuple[Format, ...] = ("onnx", "tensorflow", "predictor")
CONFIG_NAMES = ("cortex.yaml", "cortex.yml")
#: Keys of the 0.8/0.9 layout, which 0.10 moved into the blocks.
FLAT_KEYS = ("model", "model_format", "request_handler", "tf_signature_key", "tf_serving_key")


@dataclass(frozen=True)
class Tracker:
    key: str | None
    model_type: Literal["classification", "regression"]


@dataclass(frozen=True)
class ApiConfig:
    """One API: where it is served, what it runs, and the user code around it."""

    name: str
    endpoint: str
    format: Format
    project_dir: Path
    model: Path | None = None
    #: A model in object storage (``s3://...``), as written; start-up fetches it and sets ``model``.
    model_uri: str | None = None
    #: As written in the config (messages quote it), and resolved against the project dir.
    handler_name: str | None = None
    handler: Path | None = None
    python_path: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    signature_key: str | None = None
    tracker: Tracker | None = None
    #: A predictor class's ``type`` (python, onnx, tensorflow), its env, and the releases of its layout.
    predictor_type: str | None = None
    #: A 0.34-0.35 ``Handler`` class (``handle_post``...) rather than a predictor class.
    handler_class: bool = False
    env: dict[str, str] = field(default_factory=dict)
    release: str = "0.8-0.10"
    #: The models of a multi-model predictor class (``models``), by name.
    named_models: tuple[NamedModel, ...] = ()


def read_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise TargetError(f"{path}: cannot read as YAML: {exc}") from None


def is_cortex_config(path: Path) -> bool:
    """Whether ``path`` is a YAML list of Cortex resources (cheap enough for auto-detection)."""
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        resources = read_yaml(path)
    except TargetError:
        return False
    return (
        isinstance(resources, list)
        and bool(resources)
        and all(
            isinstance(item, dict) and (item.get("kind") in ("api", "deployment") or is_class_resource(item))
            for item in resources
        )
    )


def config_path(target: str) -> Path:
    """The cortex.yaml a target names: the file itself, or the one inside a directory."""
    path = Path(target)
    if path.is_dir():
        for name in CONFIG_NAMES:
            if (path / name).is_file():
                return (path / name).resolve()
    return path.resolve()


def load_config(path: Path) -> list[ApiConfig]:
    resources = read_yaml(path)
    if not isinstance(resources, list) or not all(isinstance(item, dict) for item in resources):
        raise TargetError(f"{path}: expected a list of resources (each with a 'kind')")
    deployment = _deployment_name(resources)
    apis = [_api(item, path.parent, deployment) for item in resources if item.get("kind") != "deployment"]
    if not apis:
        raise TargetError(f"{path}: defines no resource of kind 'api'")
    _check_unique(apis)
    return apis


def _deployment_name(resources: list[dict[str, Any]]) -> str | None:
    for item in resources:
        kind = item.get("kind")
        if kind not in ("api", "deployment", *REALTIME_KINDS, *OTHER_KINDS) and not is_class_resource(item):
            raise TargetError(
                f"resource kind '{kind}' is not supported; expected 'api' or 'deployment' (Cortex 0.8-0.12), "
                "none (0.13-0.19), or 'RealtimeAPI' (0.20-0.35)"
            )
        if kind == "deployment":
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise TargetError("deployment: name: key is required")
            return name
    return None


def _api(item: dict[str, Any], project: Path, deployment: str | None) -> ApiConfig:
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise TargetError("api: name: key is required")
    if is_class_resource(item):
        return _class_api(name, item, project, deployment)
    blocks = [block for block in BLOCKS if block in item]
    if len(blocks) > 1:
        raise _error(name, f"only one of {', '.join(BLOCKS)} may be given, found {', '.join(blocks)}")
    mixed = [key for key in FLAT_KEYS if key in item]
    if blocks and mixed:
        raise _error(name, f"{mixed[0]}: key is not supported next to a {blocks[0]} block")
    if blocks:
        fields = _block_fields(name, item[blocks[0]], blocks[0], project)
    else:
        fields = _flat_fields(name, item, project)
    if fields["signature_key"] is not None and fields["format"] != "tensorflow":
        key = "signature_key" if blocks else "tf_signature_key"
        raise _error(name, f"{key}: key is only valid for tensorflow models")
    endpoint = item.get("endpoint") or (f"/{deployment}/{name}" if deployment else f"/{name}")
    if not isinstance(endpoint, str) or not endpoint.startswith("/"):
        raise _error(name, f"endpoint: must start with '/', found {endpoint!r}")
    return ApiConfig(
        name=name, endpoint=endpoint, project_dir=project, tracker=_tracker(name, item), **fields
    )


def _class_api(name: str, item: dict[str, Any], project: Path, deployment: str | None) -> ApiConfig:
    """A 0.12-0.35 API: served at ``networking.endpoint`` (0.19+) or ``endpoint``, else ``/<name>``
    (``/<deployment>/<name>`` in 0.12)."""
    networking = item.get("networking")
    endpoint = networking.get("endpoint") if isinstance(networking, dict) else None
    endpoint = endpoint or item.get("endpoint") or (f"/{deployment}/{name}" if deployment else f"/{name}")
    if not isinstance(endpoint, str):
        raise _error(name, f"endpoint: expected a path, found {endpoint!r}")
    endpoint = endpoint if endpoint.startswith("/") else f"/{endpoint}"
    monitoring = item.get("monitoring")
    tracker = _tracker(name, {"tracker": monitoring}) if monitoring is not None else _tracker(name, item)
    fields = class_fields(name, item, project)
    return ApiConfig(name=name, endpoint=endpoint, project_dir=project, tracker=tracker, **fields)


def _flat_fields(name: str, item: dict[str, Any], project: Path) -> dict[str, Any]:
    """The 0.8/0.9 layout: model, model_format, request_handler, tf_signature_key at the top level."""
    model = _required(name, item, "model")
    format = _format(name, model, item.get("model_format"))
    # The 0.9 Python client wrote ``tf_serving_key``; taken as an alias where it can mean something.
    alias = item.get("tf_serving_key") if format == "tensorflow" else None
    return {
        "format": format,
        **_model(model, project),
        **_handler(name, item.get("request_handler"), project),
        "signature_key": item.get("tf_signature_key") or alias,
    }


def _block_fields(name: str, block: Any, kind: Format, project: Path) -> dict[str, Any]:
    """The 0.10 layout: one onnx / tensorflow / predictor block."""
    if not isinstance(block, dict):
        raise _error(name, f"{kind}: expected a mapping")
    metadata = block.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _error(name, f"{kind}: metadata: expected a mapping")
    python_path = block.get("python_path")
    fields: dict[str, Any] = {
        "format": kind,
        "metadata": metadata,
        "python_path": (project / python_path).resolve() if python_path else None,
        "signature_key": block.get("signature_key"),
    }
    if kind == "predictor":
        model = block.get("model")
        fields.update(_model(model, project) if model else {})
        fields.update(_handler(name, _required(name, block, "path", kind), project))
    else:
        fields.update(_model(_required(name, block, "model", kind), project))
        fields.update(_handler(name, block.get("request_handler"), project))
    return fields


def _required(name: str, item: dict[str, Any], key: str, block: str | None = None) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise _error(name, f"{block + ': ' if block else ''}{key}: key is required")
    return value


def _format(name: str, model: str, given: Any) -> Format:
    if given in ("onnx", "tensorflow"):
        return "onnx" if given == "onnx" else "tensorflow"
    if given is not None:
        raise _error(name, f"model_format: must be onnx or tensorflow, found {given!r}")
    return "onnx" if model.endswith(".onnx") else "tensorflow"


def _tracker(name: str, item: dict[str, Any]) -> Tracker | None:
    tracker = item.get("tracker")
    if tracker is None:
        return None
    model_type = tracker.get("model_type") if isinstance(tracker, dict) else None
    if model_type not in ("classification", "regression"):
        raise _error(name, "tracker: model_type: must be classification or regression")
    assert isinstance(tracker, dict)
    return Tracker(tracker.get("key"), model_type)


def _check_unique(apis: list[ApiConfig]) -> None:
    names, endpoints = [api.name for api in apis], [api.endpoint for api in apis]
    for api in apis:
        if names.count(api.name) > 1:
            raise _error(api.name, "name: is used by more than one api")
        if endpoints.count(api.endpoint) > 1:
            raise _error(api.name, f"endpoint: {api.endpoint} is used by more than one api")
