"""The two places a repository can be: a folder of this machine, read (and written) where it is, and
an object-storage prefix, fetched whole into the model cache and read there. Both are the registry's
`ModelSource`; a scan and a write of one source never run at once."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from inferd.core.errors import InvalidInput, ModelLoadError, ModelNotFound
from inferd.core.repository import ModelSource, Scan
from inferd.dialects.repository.scanning import Scanner
from inferd.dialects.repository.settings import RepositorySettings
from inferd.dialects.repository.writing import write_model
from inferd.storage.cache import ModelCache, cache_of
from inferd.storage.locations import local_path


class FolderSource:
    """A repository in a local folder."""

    def __init__(self, root: Path, settings: RepositorySettings, cache: ModelCache) -> None:
        self.root = root
        self.uri = str(root)
        self._scanner = Scanner(settings, cache)
        self._limits = (settings.max_upload_files, settings.max_upload_size)
        self._allowed = tuple(settings.allowed_outside_targets)
        self._lock = threading.Lock()

    def scan(self) -> Scan:
        with self._lock:
            if not self.root.is_dir():
                raise ModelLoadError(f"model repository {self.uri}: no such folder")
            return self._scanner.scan(self.root, lambda folder: str(folder))

    def scan_model(self, name: str) -> Scan:
        return only(self.scan(), name, self.uri)

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        with self._lock:
            write_model(self.root, name, config, files, *self._limits, allowed=self._allowed)


class StorageSource:
    """A repository under an object-storage prefix: every scan fetches the prefix (a cache hit while
    it is unchanged; any change downloads it whole again) and reads the copy."""

    def __init__(self, uri: str, settings: RepositorySettings, cache: ModelCache) -> None:
        self.uri = uri
        self._cache = cache
        self._scanner = Scanner(settings, cache, by_content=True)
        self._lock = threading.Lock()

    def scan(self) -> Scan:
        with self._lock:
            fetched = self._cache.fetch(self.uri)
            if not fetched.path.is_dir():
                raise ModelLoadError(
                    f"model repository {self.uri} is one object, not a prefix of model folders"
                )
            base = self.uri.rstrip("/")
            scan = self._scanner.scan(fetched.path, lambda folder: f"{base}/{folder.name}/")
        how = "found in the model cache" if fetched.from_cache else "downloaded"
        cache = f"{how}, version {fetched.version}"
        models = tuple(replace(served, cache=cache) for served in scan.models)
        return Scan(models, scan.problems, scan.problem_keys)

    def scan_model(self, name: str) -> Scan:
        return only(self.scan(), name, self.uri)

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        raise InvalidInput(
            f"cannot write model '{name}' into the model repository {self.uri}: a repository in object "
            "storage is only read; upload its folder with the store's own tools, then load it"
        )


def source_of(location: str, settings: RepositorySettings) -> ModelSource:
    """The source of a repository named by a path, a ``file://`` URI or a storage URI."""
    cache = cache_of(settings)
    path = local_path(location)
    if path is not None:
        return FolderSource(path.resolve(), settings, cache)
    return StorageSource(location, settings, cache)


def only(scan: Scan, name: str, uri: str) -> Scan:
    """The part of ``scan`` about model ``name``; `ModelNotFound` when the repository has none."""
    models = tuple(served for served in scan.models if served.name == name)
    problems = {found: problem for found, problem in scan.problems.items() if found == name}
    if not models and not problems:
        raise ModelNotFound(f"model '{name}' is not in the model repository {uri}")
    return Scan(models, problems, {found: scan.problem_keys.get(found, "") for found in problems})
