"""A version's ``target`` names what its services run in the version's content-addressed bundle.

What runs must be the bundle the digest describes: a target leaving it (``../other/model.py``, which
is another service's unpacked bundle or the platform's data; an absolute path; ``file:///...``; a
storage URI such as ``http://host/x.py``, fetched when the service starts) is refused when the
version is created, before its archive is read, and again when a service of it starts (a version
recorded by an inferd before this check), unless the operator allows its location with
``INFERD_ALLOWED_OUTSIDE_TARGETS`` (`inferd.storage.confine`).

At creation the bundle is not unpacked yet, so its path is judged as written: no ``..`` part (a
bundle's links all lead inside it, so a target without ``..`` stays inside), and absolute paths and
URIs only where allowed. At a start the unpacked folder is there, and the path is resolved, links
followed."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from inferd.core.errors import InvalidInput
from inferd.core.importer import split_target
from inferd.storage.confine import SETTING, outside_problem
from inferd.storage.locations import is_remote, local_path

WITHIN = "the version's bundle"


def check_new_target(target: str, allowed: Sequence[str]) -> None:
    """Refuse (`InvalidInput`) a new version's target that leaves its bundle as written."""
    module = target if is_remote(target) else split_target(target)[0]
    path = None if is_remote(module) else local_path(module)
    if path is not None and not path.is_absolute() and ".." in path.parts and "*" not in allowed:
        raise InvalidInput(
            f"target {target!r} has a '..' part: what runs must come from {WITHIN}; an operator may "
            f"allow a folder with {SETTING}"
        )
    with tempfile.TemporaryDirectory(prefix="inferd-bundle-") as empty:
        _refuse(outside_problem(target, Path(empty), allowed, WITHIN))


def check_unpacked_target(target: str, folder: Path, allowed: Sequence[str]) -> None:
    """Refuse (`InvalidInput`) a target that leaves the unpacked bundle ``folder``, links followed."""
    _refuse(outside_problem(target, folder, allowed, WITHIN))


def _refuse(problem: str | None) -> None:
    if problem is not None:
        raise InvalidInput(problem)
