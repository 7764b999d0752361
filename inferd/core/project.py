"""A project folder's ``inferd.yaml``: the serving settings of ``inferd serve DIR``, kept with the code
(what ``inferd init`` writes). Keys are `Settings` fields; ``target`` is relative to the folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from inferd.core.errors import TargetError
from inferd.core.settings import Settings

PROJECT_FILE = "inferd.yaml"


def project_settings(folder: Path) -> dict[str, Any] | None:
    """The settings ``folder/inferd.yaml`` gives, or None when the folder has none."""
    path = folder / PROJECT_FILE
    if not path.is_file():
        return None
    try:
        found = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise TargetError(f"{path} is not YAML: {exc}") from None
    if not isinstance(found, dict):
        raise TargetError(f"{path} must be a mapping of settings")
    unknown = sorted(set(found) - set(Settings.model_fields))
    if unknown:
        raise TargetError(f"{path}: unknown settings {unknown}; see docs/settings.md")
    return found
