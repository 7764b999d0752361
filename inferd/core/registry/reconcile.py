"""Reconciling the registry with a model repository (a `ModelSource`): a scan's new models added,
changed ones reloaded (the new files loaded before the old ones stop answering), removed ones
unloaded; and model files written into the repository.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from inferd.core.errors import InferdError, ModelLoadError
from inferd.core.registry.admission import Admission
from inferd.core.registry.entries import ModelEntry, _entry, _from, _label, _version_key, logger
from inferd.core.repository import Scan, ServedModel


class Reconciling(Admission):
    """How the registry follows its model repository."""

    async def refresh(self, scan: Scan | None = None, only: str | None = None, strict: bool = False) -> None:
        """Serve what the repository holds now (``scan``, else a new scan of it): new models are
        added (and loaded, unless they load on demand), changed ones reloaded (the new version is
        loaded before the old one stops answering, and a new version that fails leaves the old one
        serving), and removed ones unloaded once their calls have finished. A model the scan could
        not read is left as it was, its problem logged. ``only``: the scan is of that model alone.
        ``strict``: a problem or a failed load raises (an explicit load) rather than being logged."""
        if self.source is None:
            return
        if scan is None:
            scan = await asyncio.to_thread(self.source.scan)
        failures: list[InferdError] = []
        untold = self._told.new_problems(scan, only)
        for name, problem in scan.problems.items():
            if strict:
                raise ModelLoadError(problem)
            if name in untold:  # once per change of its files, not at every poll
                logger.error("cannot serve model %s: %s", name, problem)
        found = {(served.name, served.version): served for served in scan.models}
        if only is None:
            self._told.keep(scan.models)
        async with self._changing:
            for served in found.values():
                if not strict and self._told.failed_before(served):
                    continue  # its load failed from these very files: tried when they change
                try:
                    await self._take(served)
                except InferdError as exc:
                    self._told.failed(served)
                    failures.append(exc)
            for entry in self.entries():
                gone = (entry.name, entry.version) not in found and entry.name not in scan.problems
                if gone and (only is None or entry.name == only):
                    await self._remove(entry)
        if failures and strict:
            raise failures[0]

    async def _take(self, served: ServedModel) -> None:
        """Register ``served``, or replace the entry it changed: loaded first when the old one was
        loaded (or every model is), then put in its place, then the old one unloaded."""
        versions = self._entries.get(served.name, {})
        old = versions.get(served.version)
        if old is not None and old.fingerprint == served.fingerprint:
            return
        if old is None:
            entry = self.add_served(served)
            if self.max_loaded is None:
                await self._load(entry)
            return
        fresh = _entry(served)
        fresh.held = old.held
        if old.model is not None or self.max_loaded is None:
            await self._load(fresh)  # raises, leaving the old entry in place, when the new one fails
        versions[served.version] = fresh
        self._latest[served.name] = versions[max(versions, key=_version_key)]
        logger.info("model %s changed%s; serving its new files", _label(fresh), _from(fresh))
        await self._unload(old)

    async def _remove(self, entry: ModelEntry) -> None:
        versions = self._entries[entry.name]
        del versions[entry.version]
        if versions:
            self._latest[entry.name] = versions[max(versions, key=_version_key)]
        else:
            del self._entries[entry.name], self._latest[entry.name]
        logger.info("model %s left the repository%s", _label(entry), _from(entry))
        await self._unload(entry)

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        """Write model ``name`` into the repository (tritonclient's load with files)."""
        if self.source is None:
            raise ModelLoadError(
                f"cannot load model '{name}' from the request's config and files: this server has no "
                "model repository to write them into (serve one with --repository)"
            )
        self.source.write(name, config, files)
