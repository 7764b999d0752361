"""A model project, read once: its folder, its target, its ``inferd.yaml`` (the serving settings kept
with the code, what ``inferd init`` writes), the settings it serves with and the dialect it follows.

``serve``, ``build``, ``export`` and ``init`` all start from one `Project`, so an ``inferd.yaml`` means
the same to each: its ``name`` names the image and the Kubernetes resources, its ``engine`` and its
``dialect`` choose the extras an image installs, as they choose how ``serve`` runs. Keys are `Settings`
fields; ``target`` is relative to the folder. ``INFERD_*`` variables win over the file, and what a
command is given wins over both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inferd.config.settings import Settings
from inferd.core.errors import TargetError
from inferd.core.importer import split_target, working_directory
from inferd.storage.locations import is_remote, plain_target

PROJECT_FILE = "inferd.yaml"
#: Files in a project that call for an extra of inferd.
EXTRA_MARKERS = {"*.onnx": "onnx", "saved_model.pb": "tensorflow"}
#: Extras a dialect always needs (ABEJA's handlers take images and videos).
DIALECT_EXTRAS = {"abeja": "video", "deepaas": "deepaas"}
#: ``(dialect, target) → dialect name``: how ``auto`` is told (the dialects, a layer above, know).
Resolver = Callable[[str, str], str]


class InvalidSettings(TargetError):
    """Settings (from a project file, the environment or options) that do not validate."""


@dataclass(frozen=True)
class Project:
    """What is served and how: the folder holding the code, the target as this machine loads it, the
    settings, and the dialect (``auto`` only when it was not asked to be told, or could not be)."""

    folder: Path
    target: str
    settings: Settings
    dialect: str
    #: What ``inferd.yaml`` says; None when the target is not a folder with one.
    file: Mapping[str, Any] | None = None
    #: The settings whose value is the file's (neither a variable nor an option replaced it).
    from_file: frozenset[str] = frozenset()

    @classmethod
    def load(cls, target: str | None, given: Mapping[str, Any], resolve: Resolver | None = None) -> Project:
        """``target`` (a file, a folder, a module or handler name; None for ``INFERD_TARGET``) with
        ``given`` settings (None values are not given). A folder's ``inferd.yaml`` is read here and
        nowhere else; ``resolve`` tells an ``auto`` dialect, inside the project's folder. A target in
        object storage (``s3://bucket/project/``) is its copy in the model cache."""
        target = fetched(target, given)
        file = read_file(Path(target)) if target and Path(target).is_dir() else None
        folder = Path(target).resolve() if file is not None and target else _folder_of(target)
        values = {
            key: value for key, value in (file or {}).items() if f"INFERD_{key.upper()}" not in os.environ
        }
        from_file = frozenset(values) - {key for key, value in given.items() if value is not None}
        values.update({key: value for key, value in given.items() if value is not None})
        # The file's target wins over INFERD_TARGET: the folder named on the command line is the project.
        inner = str(file.get("target") or ".") if file is not None else target
        values.pop("target", None)
        if inner and is_remote(inner):  # an inferd.yaml naming its model code in object storage
            values["target"] = _fetch(inner, given)
        elif inner:
            values["target"] = absolute(inner, folder if file is not None else Path.cwd())
        settings = settings_from(values)
        dialect: str = settings.dialect
        if dialect == "auto" and resolve is not None:
            with working_directory(folder if file is not None else None):
                dialect = resolve(dialect, settings.target)
        return cls(folder, settings.target, settings, dialect, file, from_file - {"target"})

    @property
    def name(self) -> str:
        """The project's name (its image's, its resources'): the name it serves under when it gives
        one, else its folder's."""
        return self.settings.name or self.folder.name

    @property
    def engine(self) -> str:
        return self.settings.engine

    def extras(self, more: list[str] | tuple[str, ...] = ()) -> list[str]:
        """inferd's extras the project needs: ONNX or TensorFlow models found in its folder, the
        dialect's own needs, Ray for the ray engine, and ``more``."""
        found = {extra for pattern, extra in EXTRA_MARKERS.items() if _has(self.folder, pattern)}
        found |= named_extras(self.folder)
        if self.dialect in DIALECT_EXTRAS:
            found.add(DIALECT_EXTRAS[self.dialect])
        if self.engine == "ray":
            found.add("ray")
        return sorted(found | set(more))


def fetched(target: str | None, given: Mapping[str, Any]) -> str | None:
    """``target`` (or ``INFERD_TARGET``) when it names object storage: its copy in the model cache the
    settings name (`local_target`); a ``file://`` URI as its path; any other target as it is. Workers
    are given the copy, so it is downloaded once."""
    named = target or os.environ.get("INFERD_TARGET")
    if not named or not is_remote(named):
        return plain_target(target) if target else target
    return _fetch(named, given)


def _fetch(target: str, given: Mapping[str, Any]) -> str:
    """``target`` in object storage fetched into the model cache of the settings ``given`` (over
    ``INFERD_*`` variables); the storage code loads only for such a target."""
    from inferd.storage.cache import cache_of
    from inferd.storage.targets import local_target

    return local_target(
        target, cache_of(settings_from({key: value for key, value in given.items() if value is not None}))
    )


def read_file(folder: Path) -> dict[str, Any] | None:
    """The settings ``folder/inferd.yaml`` gives, or None when the folder has none."""
    path = folder / PROJECT_FILE
    if not path.is_file():
        return None
    import yaml  # only a project with an inferd.yaml is read as YAML

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


def settings_from(values: Mapping[str, Any]) -> Settings:
    """`Settings` of ``values`` (over ``INFERD_*`` variables), or InvalidSettings saying what is wrong."""
    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise InvalidSettings(f"invalid option: {problems}") from None


def absolute(target: str, base: Path) -> str:
    """A target naming a file or folder (relative to ``base``), made absolute: models may change the
    working directory on load (Cortex projects do), and worker processes resolve the target again.
    A module name stays as it is."""
    module, attr = split_target(target)
    path = base / module
    if not path.exists():
        return target
    return str(path.resolve()) + (f":{attr}" if attr else "")


def _folder_of(target: str | None) -> Path:
    """A folder is its own project, a file's folder holds it, and a module name is found from the
    working directory."""
    path = Path(split_target(target)[0]) if target else Path()
    if target and path.is_dir():
        return path.resolve()
    if target and path.is_file():
        return path.resolve().parent
    return Path.cwd().resolve()


#: A URI in a project's YAML files: a model or code in object storage.
STORAGE_URI = re.compile(r"\b([a-z][a-z0-9+.-]*)://\S+", re.IGNORECASE)


def named_extras(folder: Path) -> set[str]:
    """The extras of what the project's YAML files name in object storage rather than hold (a Cortex
    ``model: s3://.../iris.onnx``, an ``inferd.yaml`` or graph node ``target``): the backend that
    fetches each, and ONNX Runtime for an ``.onnx`` model."""
    from inferd.storage.backends import BACKENDS

    found: set[str] = set()
    for path in (*folder.glob("*.yaml"), *folder.glob("*.yml")):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        for uri in STORAGE_URI.finditer(text):
            scheme = uri.group(1).lower()
            if scheme in BACKENDS:
                found.add(BACKENDS[scheme])
                if uri.group(0).rstrip("'\",").endswith(".onnx"):
                    found.add("onnx")
    return found


def _has(folder: Path, pattern: str) -> bool:
    return any(True for _ in folder.rglob(pattern))
