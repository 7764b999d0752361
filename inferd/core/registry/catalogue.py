"""The registry's catalogue: the entries it holds by name and version, how they are added and
looked up, and the state that the registry's other parts (loading, admission, reconciling with a
repository) share, set up in `Catalogue.__init__`.
"""

from __future__ import annotations

import asyncio

from inferd.core.control import SharedControl
from inferd.core.errors import ModelNotFound, ModelNotReady, TargetError
from inferd.core.model import Model
from inferd.core.names import name_problem
from inferd.core.registry.entries import NOT_LOADED, UNLOADED, ModelEntry, _entry, _version_key
from inferd.core.repository import ModelFactory, ModelSource, ServedModel
from inferd.core.slots import Slots
from inferd.core.told import Told


class Catalogue:
    """The registered models by name and version; the parameters are `ModelRegistry`'s."""

    def __init__(
        self,
        source: ModelSource | None = None,
        max_loaded: int | None = None,
        drain_seconds: float = 30.0,
        control: SharedControl | None = None,
    ) -> None:
        self.source = source
        #: Where the other worker processes of the server hear of this one's loads and unloads.
        self.control = control
        self.max_loaded = max_loaded
        self.drain_seconds = drain_seconds
        self._entries: dict[str, dict[str | None, ModelEntry]] = {}
        self._latest: dict[str, ModelEntry] = {}
        #: Explicit loads and unloads and refreshes run one at a time; loads for calls do not wait
        #: for them (each takes its own slot).
        self._changing = asyncio.Lock()
        #: The entries loaded or loading, least recently used first.
        self._slots: Slots[ModelEntry] = Slots(max_loaded)
        #: Loads waiting for room take their slots in the order they came: a load waiting for a
        #: model to go idle is not overtaken by one that came later and found that model first.
        self._admitting = asyncio.Lock()
        #: Loads waiting for room (every loaded model busy, or their own unload not over): while
        #: one does, a load queues behind it rather than take a slot freed meanwhile.
        self._wanting = 0
        #: What the repository's polls have logged already (`inferd.core.told`).
        self._told = Told()

    def add(self, name: str, factory: ModelFactory, version: str | None = None) -> ModelEntry:
        return self.add_served(ServedModel(name, factory, version))

    def add_served(self, served: ServedModel) -> ModelEntry:
        """Register a model without loading it; a duplicate (name, version) is a mistake, and a name no
        protocol path can carry (`inferd.core.names`) is refused as a `TargetError`."""
        problem = name_problem(served.name)
        if problem is not None:
            raise TargetError(problem)
        versions = self._entries.setdefault(served.name, {})
        if served.version in versions:
            raise ValueError(f"model '{served.name}' version {served.version!r} is registered twice")
        entry = versions[served.version] = _entry(served)
        self._latest[served.name] = versions[max(versions, key=_version_key)]
        return entry

    def entries(self) -> list[ModelEntry]:
        return [entry for versions in self._entries.values() for entry in versions.values()]

    def names(self) -> list[str]:
        return list(self._entries)

    def versions(self, name: str) -> list[ModelEntry]:
        """Every registered version of ``name``, or `ModelNotFound`."""
        versions = self._entries.get(name)
        if not versions:
            raise ModelNotFound(f"model '{name}' is not served here")
        return list(versions.values())

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
        """Every model is ready; when models load on demand, none failed to load."""
        if self.max_loaded is not None:
            return all(entry.ready or entry.reason in (NOT_LOADED, UNLOADED) for entry in self.entries())
        return all(entry.ready for entry in self.entries())

    def _registered(self, entry: ModelEntry) -> bool:
        """``entry`` is still what its name and version name (not replaced by new files, nor
        removed)."""
        return self._entries.get(entry.name, {}).get(entry.version) is entry
