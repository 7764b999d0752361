"""Where a model project's files are, and how its serve target reads once copied into an image."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from inferd.core.importer import split_target
from inferd.core.settings import Settings

#: Where the image holds the project (and the working directory of the server in it).
APP_DIR = "/app"
HTTP_PORT = 8080
GRPC_PORT = 8081
LIVE_PATH = "/v2/health/live"
READY_PATH = "/v2/health/ready"
#: Settings an image or manifest fixes itself (the target, the ports, where it runs), never passed on.
PLACED = frozenset({"target", "host", "port", "grpc_port", "engine", "ray_address", "workers"})
#: Settings of the scale-out itself, which a manifest states in its own terms (replicas, HPA).
SCALING = frozenset(
    {"replicas", "autoscale"} | {name for name in Settings.model_fields if name.startswith("ray_")}
)


@dataclass(frozen=True)
class Project:
    """A serve target as a folder to copy into an image, and the target as it reads there."""

    folder: Path
    target: str

    @property
    def name(self) -> str:
        """A Kubernetes name (DNS-1123 label) for the project: its folder's, lower-cased."""
        return kubernetes_name(self.folder.name)


def project_of(target: str, cwd: Path | None = None) -> Project:
    """A file target's folder goes to ``/app`` (``dir/model.py:Iris`` → ``/app/model.py:Iris``), a
    folder is ``/app`` itself, and a module name (``IrisModel``, ``main:handler``) stays as it is,
    the working directory being the project (``/app`` in the image)."""
    module, attr = split_target(target)
    path = Path(module)
    suffix = f":{attr}" if attr else ""
    if path.is_dir():
        return Project(path.resolve(), APP_DIR + suffix)
    if path.is_file():
        return Project(path.resolve().parent, f"{APP_DIR}/{path.name}{suffix}")
    return Project((cwd or Path.cwd()).resolve(), target)


def kubernetes_name(text: str) -> str:
    """``text`` as a DNS-1123 label: lower-case letters, digits and dashes, at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    return name or "inferd"


def given(settings: Settings, leave_out: frozenset[str] = PLACED | SCALING) -> dict[str, object]:
    """The settings set explicitly, as JSON values, but for ``leave_out``."""
    fields = settings.model_dump(mode="json", exclude_unset=True)
    return {key: value for key, value in sorted(fields.items()) if key not in leave_out and value is not None}


def environment(settings: Settings) -> dict[str, str]:
    """``given`` settings as the ``INFERD_*`` variables of a container."""
    return {f"INFERD_{key.upper()}": _text(value) for key, value in given(settings).items()}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
