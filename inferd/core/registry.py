"""Named, versioned models with their lifecycle: registered → loading → ready → unloading → unavailable.

The registry holds factories, not instances, so every worker process builds and loads its own
copy, and an unloaded model can be loaded again (the V2 model repository extension).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from inferd.core.errors import ModelLoadError, ModelNotFound, ModelNotReady, TargetError
from inferd.core.metrics import MODEL_LOADS, MODEL_UNLOADS
from inferd.core.model import Model, resolve
from inferd.core.names import name_problem
from inferd.core.types import ModelMetadata

logger = logging.getLogger("inferd.registry")

ModelFactory = Callable[[], Model]


class ModelState(str, Enum):
    READY = "READY"
    UNAVAILABLE = "UNAVAILABLE"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"


@dataclass
class ModelEntry:
    """One (name, version) of the repository and what became of it."""

    name: str
    version: str | None
    factory: ModelFactory
    model: Model | None = None
    #: Read once when the model is loaded, so requests are checked without rebuilding it.
    metadata: ModelMetadata | None = None
    state: ModelState = ModelState.UNAVAILABLE
    reason: str = ""

    @property
    def ready(self) -> bool:
        return self.state is ModelState.READY and self.model is not None and self.model.ready()


class ModelRegistry:
    def __init__(self) -> None:
        self._entries: dict[str, dict[str | None, ModelEntry]] = {}
        self._latest: dict[str, ModelEntry] = {}

    def add(self, name: str, factory: ModelFactory, version: str | None = None) -> None:
        """Register a model without loading it; a duplicate (name, version) is a mistake, and a name no
        protocol path can carry (`inferd.core.names`) is refused as a `TargetError`."""
        problem = name_problem(name)
        if problem is not None:
            raise TargetError(problem)
        versions = self._entries.setdefault(name, {})
        if version in versions:
            raise ValueError(f"model '{name}' version {version!r} is registered twice")
        versions[version] = ModelEntry(name, version, factory)
        self._latest[name] = versions[max(versions, key=_version_key)]

    def entries(self) -> list[ModelEntry]:
        return [entry for versions in self._entries.values() for entry in versions.values()]

    def names(self) -> list[str]:
        return list(self._entries)

    def entry(self, name: str, version: str | None = None) -> ModelEntry:
        """The entry of ``name`` at ``version``, or its latest version when none is given."""
        if not version:
            latest = self._latest.get(name)
            if latest is None:
                raise ModelNotFound(f"model '{name}' is not served here")
            return latest
        versions = self._entries.get(name)
        if not versions:
            raise ModelNotFound(f"model '{name}' is not served here")
        if version not in versions:
            raise ModelNotFound(f"model '{name}' has no version '{version}'")
        return versions[version]

    def ready_entry(self, name: str, version: str | None = None) -> ModelEntry:
        """The entry of a loaded, ready model, or an error saying why it cannot answer."""
        entry = self.entry(name, version)
        if not entry.ready:
            raise ModelNotReady(f"model '{name}' is not ready ({entry.state.value.lower()})")
        return entry

    def get(self, name: str, version: str | None = None) -> Model:
        model = self.ready_entry(name, version).model
        assert model is not None
        return model

    def all_ready(self) -> bool:
        return all(entry.ready for entry in self.entries())

    async def load(self, name: str, version: str | None = None) -> None:
        entry = self.entry(name, version)
        if entry.state is ModelState.READY:
            return
        entry.state, entry.reason = ModelState.LOADING, ""
        started = time.perf_counter()
        try:
            model = entry.factory()
            model.name, model.version = entry.name, entry.version
            await resolve(model.load())
            metadata = model.metadata()
        except Exception as exc:
            logger.exception("loading model %s failed", name)
            MODEL_LOADS.labels(name, "error").inc()
            entry.state, entry.reason = ModelState.UNAVAILABLE, f"{type(exc).__name__}: {exc}"
            raise ModelLoadError(f"model '{name}' failed to load: {entry.reason}") from exc
        entry.model, entry.metadata, entry.state = model, metadata, ModelState.READY
        MODEL_LOADS.labels(name, "ok").inc()
        logger.info("model %s loaded in %.2f s", name, time.perf_counter() - started)

    async def unload(self, name: str, version: str | None = None) -> None:
        entry = self.entry(name, version)
        model, entry.model, entry.metadata = entry.model, None, None
        entry.state = ModelState.UNLOADING
        try:
            if model is not None:
                await resolve(model.unload())
        finally:
            entry.state, entry.reason = ModelState.UNAVAILABLE, "unloaded"
            MODEL_UNLOADS.labels(name).inc()
            logger.info("model %s unloaded", name)

    async def load_all(self) -> None:
        for entry in self.entries():
            await self.load(entry.name, entry.version)

    async def unload_all(self) -> None:
        for entry in self.entries():
            if entry.model is not None:
                await self.unload(entry.name, entry.version)


def _version_key(version: str | None) -> tuple[int, int, str]:
    """Order versions numerically where they are numbers, so '10' is later than '9'."""
    if version is None:
        return (0, 0, "")
    return (1, int(version), "") if version.isdigit() else (1, -1, version)
