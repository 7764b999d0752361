"""Fields every cortex.yaml layout reads the same way (where the model is, a handler file) and the
error naming the API, shared by the 0.8-0.10 parser (`config`) and the 0.12-0.35 one
(`config_classes`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferd.core.errors import TargetError
from inferd.storage.locations import local_path


def _model(value: str, project: Path) -> dict[str, Any]:
    """Where the model is: a path relative to the project dir (``file://`` is the same), or a storage
    URI (``s3://``, ``gs://``, ``https://``) kept as written, for start-up to fetch."""
    path = local_path(value)
    if path is None:
        return {"model_uri": value}
    return {"model": (project / path).resolve()}


def _handler(name: str, value: Any, project: Path) -> dict[str, Any]:
    if value is None:
        return {"handler_name": None, "handler": None}
    if not isinstance(value, str):
        raise _error(name, f"request_handler: expected a path, found {value!r}")
    return {"handler_name": value, "handler": (project / value).resolve()}


def _error(name: str, message: str) -> TargetError:
    return TargetError(f"api {name}: {message}")
