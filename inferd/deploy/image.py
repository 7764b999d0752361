"""How a `Project` reads once copied into an image: the project folder is ``/app``, the target is
named from there, and the settings the image does not hold itself travel as ``INFERD_*`` variables."""

from __future__ import annotations

import json
import re
from pathlib import Path

from inferd.config.project import Project
from inferd.config.settings import Settings
from inferd.core.importer import split_target

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


def image_target(project: Project, inner: bool = False) -> str:
    """The target as the image serves it: a project with an ``inferd.yaml`` is ``/app`` (its server
    reads the file there) unless ``inner`` asks for the file's own target; a file in the folder is
    under ``/app`` (``dir/model.py:Iris`` → ``/app/model.py:Iris``); a module name stays as it is,
    the working directory being the project (``/app`` in the image)."""
    if project.file is not None and not inner:
        return APP_DIR
    module, attr = split_target(project.target)
    path = Path(module)
    if not path.is_absolute() or not path.is_relative_to(project.folder):
        return project.target
    relative = path.relative_to(project.folder).as_posix()
    return (APP_DIR if relative == "." else f"{APP_DIR}/{relative}") + (f":{attr}" if attr else "")


def resource_name(project: Project) -> str:
    """The project's name as a Kubernetes name (and an image's): the served model's, else its folder's."""
    return kubernetes_name(project.name)


def kubernetes_name(text: str) -> str:
    """``text`` as a DNS-1123 label: lower-case letters, digits and dashes, at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    return name or "inferd"


def given(
    project: Project, leave_out: frozenset[str] = PLACED | SCALING, with_file: bool = False
) -> dict[str, object]:
    """The settings set explicitly, as JSON values, but for ``leave_out`` and, unless ``with_file``,
    those the image reads from its copy of ``inferd.yaml``."""
    fields = project.settings.model_dump(mode="json", exclude_unset=True)
    skip = leave_out if with_file else leave_out | project.from_file
    return {key: value for key, value in sorted(fields.items()) if key not in skip and value is not None}


def environment(project: Project) -> dict[str, str]:
    """``given`` settings as the ``INFERD_*`` variables of a container."""
    return {f"INFERD_{key.upper()}": _text(value) for key, value in given(project).items()}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
