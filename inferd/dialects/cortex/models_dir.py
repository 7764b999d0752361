"""``models: dir:`` of a Cortex 0.20+ predictor: a folder whose subfolders are the API's models, each
named after its subfolder, each holding its model or its versions as numbered subfolders (the
highest is the latest), as Cortex's "multi-model" docs laid it out. Kept apart from
config_classes.py, which reads the rest of the predictor block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferd.dialects.cortex.config_fields import _error
from inferd.storage.locations import local_path


def models_in_dir(name: str, value: Any, signature_key: Any, project: Path) -> list[dict[str, Any]]:
    """One ``{name, path, signature_key}`` entry per subfolder of ``dir`` (relative to the project),
    sorted by name; files and hidden folders beside them are not models."""
    if not isinstance(value, str) or not value:
        raise _error(name, "predictor: models: dir: expected a path")
    path = local_path(value)
    if path is None:
        raise _error(
            name,
            f"predictor: models: dir: {value}: a folder in object storage is not supported yet; "
            "use a local folder or list the models in paths",
        )
    folder = (project / path).resolve()
    if not folder.is_dir():
        raise _error(name, f"predictor: models: dir: {value}: no such folder")
    found = [
        {"name": child.name, "path": str(child), "signature_key": signature_key}
        for child in sorted(folder.iterdir())
        if child.is_dir() and not child.name.startswith(".")
    ]
    if not found:
        raise _error(name, f"predictor: models: dir: {value}: holds no model folder")
    return found
