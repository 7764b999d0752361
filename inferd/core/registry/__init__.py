"""Named, versioned models with their lifecycle: registered → loading → ready → unloading → unavailable.

The registry holds factories, not instances, so every worker process builds and loads its own
copy, and an unloaded model can be loaded again (the V2 model repository extension). With a
`ModelSource` (a model repository) the set of models itself changes at run time: `refresh` adds,
reloads and removes models to match what the repository holds. With ``max_loaded`` models are loaded
when first called and the least recently used are unloaded to make room (Ray Serve's multiplexing).

`ModelRegistry` is composed of one class per part, each over the one before: `catalogue` (the
entries by name and version; `entries`: one of them), `loading` (one model loaded or unloaded),
`admission` (slots, and calls waiting for their model's load) and `reconcile` (the repository); it
adds the explicit loads and unloads the server asks for, which the other worker processes follow.
"""

from __future__ import annotations

import asyncio

from inferd.core.errors import InferdError
from inferd.core.registry.entries import ModelEntry, ModelState, logger
from inferd.core.registry.reconcile import Reconciling
from inferd.core.repository import ModelFactory, ServedModel

__all__ = ["ModelEntry", "ModelFactory", "ModelRegistry", "ModelState", "ServedModel"]

#: How often a worker looks for the loads and unloads another worker answered.
FOLLOW_SECONDS = 0.5


class ModelRegistry(Reconciling):
    """The models a process serves. ``source``: a model repository to reconcile with; ``max_loaded``:
    the most models loaded at once (None: every model stays loaded); ``drain_seconds``: how long an
    unload waits for the calls inside a model to finish."""

    async def load(self, name: str, version: str | None = None) -> None:
        """Load ``name`` (at ``version``; every version it has when none is given, as Triton loads a
        model). With a repository, ``name`` is read from it first, so a model added since the last
        poll, or changed, is served as it is now; the other workers follow."""
        await self._load_model(name, version)
        if self.control is not None:
            self.control.record(name, "load")

    async def unload(self, name: str, version: str | None = None) -> None:
        """Unload ``name`` (at ``version``, else every version of it) once its calls have finished; it
        stays registered, so a load brings it back. The other workers follow."""
        await self._unload_model(name, version)
        if self.control is not None:
            self.control.record(name, "unload")

    async def follow(self) -> None:
        """Load and unload what the other workers did since this one last looked."""
        if self.control is None:
            return
        for name, operation in list(self.control.news()):
            try:
                await (self._load_model(name) if operation == "load" else self._unload_model(name))
            except InferdError as exc:
                logger.error("cannot %s model %s as another worker did: %s", operation, name, exc.message)

    async def _load_model(self, name: str, version: str | None = None) -> None:
        if self.source is not None:
            await self.refresh(await asyncio.to_thread(self.source.scan_model, name), only=name, strict=True)
        entries = [self.entry(name, version)] if version else self.versions(name)
        for entry in entries:
            entry.held = False
            async with self._changing:
                await self._load(entry)

    async def _unload_model(self, name: str, version: str | None = None) -> None:
        entries = [self.entry(name, version)] if version else self.versions(name)
        async with self._changing:
            for entry in entries:
                entry.held = True
                await self._unload(entry)

    async def load_all(self) -> None:
        """Load every model; when models load on demand, none (they load when first called)."""
        if self.max_loaded is not None:
            return
        for entry in self.entries():
            async with self._changing:
                await self._load(entry)

    async def unload_all(self) -> None:
        async with self._changing:
            await asyncio.gather(*(self._unload(entry) for entry in self.entries()))

    async def watch(self, poll_seconds: float | None) -> None:
        """Until cancelled: follow the other workers' loads and unloads, and refresh from the
        repository every ``poll_seconds`` (None: never); a failed scan is logged and tried again at
        the next poll."""
        loop = asyncio.get_running_loop()
        tick = min(poll_seconds or FOLLOW_SECONDS, FOLLOW_SECONDS) if self.control else poll_seconds
        if tick is None:
            return
        next_poll = loop.time() + (poll_seconds or 0)
        while True:
            await asyncio.sleep(tick)
            await self.follow()
            if poll_seconds is None or loop.time() < next_poll:
                continue
            next_poll = loop.time() + poll_seconds
            try:
                await self.refresh()
            except Exception:
                logger.exception("reading the model repository %s failed", self.source and self.source.uri)
