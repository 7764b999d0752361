"""Shipping the project to a Ray cluster whose nodes do not see this machine's folders.

Connected to a cluster (``ray_address``), the driver joins it with Ray's runtime_env ``working_dir``
set to the folder the server works in (the project's, when it has an ``inferd.yaml``): Ray zips it,
stores it in the cluster's GCS and unpacks it on each node, where a replica starts in that copy with
it on ``sys.path``; Ray Serve gives the job's ``working_dir`` to every deployment of the application,
beside each replica's own ``env_vars``. The target, which this machine made absolute, is made
relative to that folder, so the replicas load the copy, never a path only this machine has.

Ray is not imported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferd.core.errors import EngineError
from inferd.core.importer import split_target

#: What never ships: version control, virtual environments and caches, besides what the project's
#: ``.gitignore`` and ``.rayignore`` leave out (Ray reads those itself). Ray 2.47 excludes nothing
#: by default, later Rays the first four.
EXCLUDES = (
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "*.pyc",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
)
#: Ray's words for a package over its limit (``ray._private.runtime_env.packaging``).
TOO_LARGE = "exceeds the maximum size"


def runtime_env(workdir: str) -> dict[str, Any]:
    """The driver's runtime_env on a cluster: ``workdir`` shipped, less `EXCLUDES`."""
    return {"working_dir": workdir, "excludes": list(EXCLUDES)}


def shipped_fields(fields: dict[str, Any], workdir: str) -> dict[str, Any]:
    """The settings a replica gets, its ``target`` relative to the shipped ``workdir`` when it names a
    path inside it (``.`` for the folder itself, ``model.py:Cls`` for a file in it); a module name,
    or a path elsewhere, stays as it is."""
    target = fields.get("target")
    if not target:
        return fields
    module, attr = split_target(target)
    path, folder = Path(module), Path(workdir).resolve()
    if not path.is_absolute() or not path.resolve().is_relative_to(folder):
        return fields
    relative = path.resolve().relative_to(folder).as_posix() or "."
    return {**fields, "target": relative + (f":{attr}" if attr else "")}


def shipping_error(exc: Exception, workdir: str) -> EngineError | None:
    """Ray's refusal of a package over its limit (the largest gRPC message, 512 MiB zipped by default,
    which its message names) as an EngineError naming the folder and what to do; None for any other
    error."""
    if TOO_LARGE not in str(exc):
        return None
    return EngineError(
        f"the project folder {workdir} is too large to ship to the Ray cluster as its working_dir "
        f"({exc}). Leave large files out with a '.rayignore' in the folder, or load them from model "
        "storage (a URI)"
    )
