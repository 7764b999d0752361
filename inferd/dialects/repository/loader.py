"""The repository dialect: ``inferd serve --repository DIR_OR_URI`` serves every model folder of a
repository, each in its own dialect, over V2 REST and gRPC (a repository has no wire protocol of its
own: its models' Seldon or Cortex routes are not served). The registry reconciles with the
repository on every poll (``repository_poll``) or on the V2 repository API's load and unload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelLoadError, TargetError
from inferd.core.importer import split_target
from inferd.core.repository import ModelSource
from inferd.dialects.base import ServedModel, TryForm
from inferd.dialects.repository.files import MLSERVER_FILE, SETTINGS_FILE
from inferd.dialects.repository.scanning import model_folders
from inferd.dialects.repository.settings import RepositorySettings
from inferd.dialects.repository.sources import source_of

#: Files that make a folder a model or project of its own rather than a repository.
OWN_MARKERS = (SETTINGS_FILE, MLSERVER_FILE, "model.py", "cortex.yaml", "cortex.yml")


def looks_like_repository(folder: Path) -> bool:
    """A folder with no model or project of its own whose subfolders hold settings files."""
    if not folder.is_dir() or any((folder / marker).exists() for marker in OWN_MARKERS):
        return False
    return any(
        (child / SETTINGS_FILE).is_file() or (child / MLSERVER_FILE).is_file()
        for child in model_folders(folder)
    )


def location(settings: RepositorySettings) -> str:
    """The repository the settings name: ``repository``, else the served target (a folder detected
    as a repository)."""
    found = settings.repository or settings.target
    if not found:
        raise TargetError("no model repository to serve: give --repository DIR_OR_URI")
    return found


class RepositoryDialect:
    name = "repository"
    settings_type = RepositorySettings
    health_paths: tuple[str, ...] = ()

    def __init__(self) -> None:
        #: One source per repository in a process: the models, the registry and the polls share it.
        self._sources: dict[str, ModelSource] = {}

    def detect(self, target: str) -> bool:
        return looks_like_repository(Path(split_target(target)[0]))

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def source(self, settings: RepositorySettings) -> ModelSource:
        where = location(settings)
        if where not in self._sources:
            self._sources[where] = source_of(where, settings)
        return self._sources[where]

    def models(self, settings: RepositorySettings) -> list[ServedModel]:
        """Every model of the repository; any model it cannot serve stops start-up, naming it."""
        scan = self.source(settings).scan()
        if scan.problems:
            raise ModelLoadError("; ".join(scan.problems[name] for name in sorted(scan.problems)))
        return list(scan.models)

    def poll_seconds(self, settings: RepositorySettings) -> float | None:
        return settings.repository_poll

    def max_loaded(self, settings: RepositorySettings) -> int | None:
        return settings.max_loaded_models

    def routes(self, dataplane: DataPlane, settings: RepositorySettings) -> list[BaseRoute]:
        return []  # V2 only

    def grpc_services(self, dataplane: DataPlane, settings: RepositorySettings) -> list[Any]:
        return []

    def try_form(self, name: str, dataplane: DataPlane, settings: RepositorySettings) -> TryForm | None:
        return None


dialect = RepositoryDialect()
