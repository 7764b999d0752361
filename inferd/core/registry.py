"""Named, versioned models with their lifecycle: registered → loading → ready → unloading → unavailable.

The registry holds factories, not instances, so every worker process builds and loads its own
copy, and an unloaded model can be loaded again (the V2 model repository extension). With a
`ModelSource` (a model repository) the set of models itself changes at run time: `refresh` adds,
reloads and removes models to match what the repository holds. With ``max_loaded`` models are loaded
when first called and the least recently used are unloaded to make room (Ray Serve's multiplexing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from inferd.core.control import SharedControl
from inferd.core.errors import InferdError, ModelLoadError, ModelNotFound, ModelNotReady, TargetError
from inferd.core.metrics import MODEL_LOADS, MODEL_UNLOADS, count
from inferd.core.model import Model, resolve
from inferd.core.names import name_problem
from inferd.core.repository import ModelFactory, ModelSource, Scan, ServedModel
from inferd.core.slots import Slots
from inferd.core.told import Told
from inferd.core.types import ModelMetadata
from inferd.core.user_code import is_own_failure

logger = logging.getLogger("inferd.registry")

__all__ = ["ModelEntry", "ModelFactory", "ModelRegistry", "ModelState", "ServedModel"]

#: A model that loaded within this many seconds loads on the event loop the next time...
QUICK_LOAD = 0.005
#: ...until this many of its loads in a row took longer. One slow load is more often the machine
#: (another process on the core, a garbage collection) than the model; and back in a thread, a quick
#: load waits for the GIL behind the busy loop after each read (up to the 5 ms switch interval), so
#: it measured slow again and stayed there, holding up every other model's load meanwhile.
SLOW_LOADS = 2
#: How often a worker looks for the loads and unloads another worker answered.
FOLLOW_SECONDS = 0.5
#: Why a model that was never loaded is not ready (a multiplexed model before its first call).
NOT_LOADED = "not loaded yet"
#: Why a model unloaded on request (or by eviction) is not ready.
UNLOADED = "unloaded"


class ModelState(str, Enum):
    READY = "READY"
    UNAVAILABLE = "UNAVAILABLE"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"


@dataclass(eq=False)
class ModelEntry:
    """One (name, version) of the repository and what became of it."""

    name: str
    version: str | None
    factory: ModelFactory
    #: Where the model comes from (a folder or URI) and a digest of its files, for a repository's.
    source: str = ""
    fingerprint: str = ""
    cache: str = ""
    dialect: str = ""
    model: Model | None = None
    #: Read once when the model is loaded, so requests are checked without rebuilding it.
    metadata: ModelMetadata | None = None
    state: ModelState = ModelState.UNAVAILABLE
    reason: str = NOT_LOADED
    #: Unloaded on request: a multiplexed call does not load it back (an explicit load does).
    held: bool = False
    #: Calls inside the model now (`inferd.core.dataplane.ModelCall`); unloading waits for them.
    inflight: int = 0
    #: Calls waiting for its load: with calls inside it, they keep it from being unloaded for room.
    waiting: int = 0
    #: Their futures, which its load answers as it ends: ``asyncio.shield`` of the load's task would
    #: answer them a turn of the loop later, with a future and two callbacks more per call.
    waiters: list[asyncio.Future[None]] = field(default_factory=list, repr=False)
    #: The model unloaded to make room for its load, until that load's log line names it.
    replaced: ModelEntry | None = field(default=None, repr=False)
    #: Called by the last call leaving the model, so loads waiting for room look again.
    on_idle: Callable[[], None] | None = field(default=None, repr=False)
    #: How long its last load took (None: never loaded here).
    load_seconds: float | None = None
    #: Its loads in a row that took over `QUICK_LOAD` since one that did not (None: none did yet, or
    #: `SLOW_LOADS` did since): below `SLOW_LOADS`, it loads on the event loop.
    slow_loads: int | None = None
    idle: asyncio.Event | None = field(default=None, repr=False)
    #: Its load under way (None: none is): every call of it, and an explicit load, waits for that
    #: load rather than starting its own.
    loading: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def ready(self) -> bool:
        return self.state is ModelState.READY and self.model is not None and self.model.ready()


class ModelRegistry:
    """The models a process serves. ``source``: a model repository to reconcile with; ``max_loaded``:
    the most models loaded at once (None: every model stays loaded); ``drain_seconds``: how long an
    unload waits for the calls inside a model to finish."""

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

    # ---- loading and unloading ----

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

    def touch(self, name: str, version: str | None = None) -> bool:
        """Mark ``name`` (at ``version``) as just used if it is loaded and ready; False: a call must
        `ensure_loaded` it first. A call of a loaded model takes this way, awaiting nothing."""
        entry = self.entry(name, version)
        if not entry.ready:
            return False
        self._slots.touch(entry)
        return True

    async def ensure_loaded(self, name: str, version: str | None = None) -> ModelEntry:
        """The entry of ``name``, loaded for a call now if it was not, and marked as just used. A
        model unloaded on request stays unloaded. Loads of distinct models run side by side, each in
        a slot of ``max_loaded`` it takes as it starts (`inferd.core.slots`), while loaded models
        keep answering; the calls of a model being loaded share its load (they go on once it is
        loaded, or fail with its error), and a model with calls inside it or waiting for it is
        never unloaded to make room, so no call finds its model unloaded again before using it."""
        entry = self.entry(name, version)
        if not entry.ready:
            entry = await self._wait_loaded(name, version)
        self._slots.touch(entry)
        return entry

    async def _wait_loaded(self, name: str, version: str | None) -> ModelEntry:
        """The entry ``name`` at ``version`` names once it is loaded (the new one if its files
        changed meanwhile), unloaded on request, or loaded but not ready."""
        while True:
            entry = self.entry(name, version)
            if entry.state is ModelState.READY or entry.held:
                return entry
            if entry.loading is None:
                self._start_load(entry, for_calls=True)
            waiter = asyncio.get_running_loop().create_future()
            entry.waiters.append(waiter)
            entry.waiting += 1
            try:
                await waiter  # cancelled (its client left): the load goes on for the others
            except BaseException:
                entry.waiting -= 1
                if not entry.waiting and not entry.inflight:  # it may be unloaded for room now
                    self._slots.wake()
                raise
            entry.waiting -= 1  # the call enters the model before anything else runs

    def _start_load(self, entry: ModelEntry, *, for_calls: bool) -> asyncio.Task[None]:
        """A task loading ``entry``, which the calls waiting for it share: each waits on a future of
        its own (``entry.waiters``) that the task answers as it ends, so a call that is cancelled
        (its client left) does not cancel the load for the others. ``for_calls``: not when it was
        unloaded on request or replaced (new files) while waiting for room.

        A task even when the load could run at once in the call's turn of the loop: the calls of
        that model arriving before it runs join it, as do those arriving while it waits for room.
        Loading at once in the call's turn made 0.80 loads per call (every call not for a loaded
        model loads it; bench/results/repository-multiplex-2026-11-26-d.txt). Delaying loads to
        gather more calls per load does not pay either: one load a turn of the loop, the one with
        the most calls waiting first, made 0.58 loads per call instead of 0.76 but 10-15% fewer
        requests a second and a p99 1.5-1.8 times as long (repository-multiplex-2026-11-26-f.txt)."""
        loading = entry.loading = asyncio.get_running_loop().create_task(self._load_in_slot(entry, for_calls))
        loading.add_done_callback(_retrieve)
        return loading

    async def _load_in_slot(self, entry: ModelEntry, for_calls: bool) -> None:
        admitted = False
        failure: BaseException | None = None
        try:
            await self._admit(entry)
            admitted = True
            if for_calls and (entry.held or not self._registered(entry)):
                return
            await self._load_now(entry)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            entry.loading = None
            if admitted and entry.state is not ModelState.READY:  # not loaded: its slot is free again
                if entry.state is ModelState.LOADING:  # cancelled
                    entry.state, entry.reason = ModelState.UNAVAILABLE, NOT_LOADED
                self._slots.give_back(entry)
            if entry.replaced is not None:  # made room, then not loaded (nor logged: cancelled, held)
                logger.info("model %s unloaded to make room", _label(entry.replaced))
                entry.replaced = None
            waiters, entry.waiters = entry.waiters, []
            _answer(waiters, failure)

    async def _admit(self, entry: ModelEntry) -> None:
        """Take a slot for ``entry``: a free one, else the least recently used idle model's, which is
        unloaded now. While every loaded model is busy (calls inside it or waiting for it, or
        loading), wait for one to go idle; after ``drain_seconds`` of that, the least recently used
        loaded one is unloaded once its calls are answered, as an explicit unload is.

        When no other load waits for room, the slot is taken without the ``_admitting`` lock (its
        coroutines cost more than the rest of the swap's bookkeeping), and, the idle model's unload
        being synchronous, without letting the loop run: under requests spread over many models
        that is every load."""
        slots = self._slots
        if not self._wanting and entry not in slots:
            if slots.full():
                victim = slots.least_recent(_idle)
                if victim is not None and self._begin_unload(victim):
                    await self._make_room(entry, victim)
            if not self._wanting and not slots.full():
                slots.take(entry)
                entry.on_idle = slots.wake if slots.limit is not None else None
                return
        async with self._admitting:
            while entry in slots:  # its unload (to make room, after its calls) is not over yet
                await self._wait_for_room()
            while slots.full():
                victim = slots.least_recent(_idle)
                if victim is None and not await self._wait_for_room():
                    victim = slots.least_recent(_loaded)
                if victim is not None and self._begin_unload(victim):
                    await self._make_room(entry, victim)
            slots.take(entry)
        entry.on_idle = slots.wake if slots.limit is not None else None

    async def _wait_for_room(self) -> bool:
        """`Slots.wait`, counted in ``_wanting`` meanwhile."""
        self._wanting += 1
        try:
            return await self._slots.wait(self.drain_seconds)
        finally:
            self._wanting -= 1

    async def _make_room(self, entry: ModelEntry, victim: ModelEntry) -> None:
        """Unload ``victim`` for ``entry``'s load, whose line names both when it ends (`_load_now`):
        under requests spread over many models every load is such a swap, and three lines a swap
        made thousands a second."""
        if entry.replaced is not None:  # a second model unloaded for one load: the first is logged
            logger.info("model %s unloaded to make room", _label(entry.replaced))
        entry.replaced = victim
        await self._finish_unload(victim, logged=False)

    def _registered(self, entry: ModelEntry) -> bool:
        """``entry`` is still what its name and version name (not replaced by new files, nor
        removed)."""
        return self._entries.get(entry.name, {}).get(entry.version) is entry

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

    async def _load(self, entry: ModelEntry) -> None:
        """Load ``entry`` (an explicit load, ``_changing`` held): after the load of it under way, if
        any (its failure is this one's), and in a slot of its own."""
        if entry.loading is not None:
            await asyncio.shield(entry.loading)
        if entry.state is not ModelState.READY:
            await asyncio.shield(self._start_load(entry, for_calls=False))

    async def _load_now(self, entry: ModelEntry) -> None:
        entry.state, entry.reason = ModelState.LOADING, ""
        started = time.perf_counter()
        try:
            model = entry.factory()
            model.name, model.version = entry.name, entry.version
            loading = model.load() if entry.slow_loads is not None else await self._in_thread(model)
            if loading is not None:  # an async load
                await resolve(loading)
            metadata = model.metadata()
        except BaseException as exc:  # whatever the model's code raised (SystemExit too) is its failure
            if not is_own_failure(exc):
                raise
            logger.exception("loading model %s failed%s", _label(entry), _in_place(entry))
            entry.replaced = None
            count(MODEL_LOADS, entry.name, "error")
            entry.state, entry.reason = ModelState.UNAVAILABLE, f"{type(exc).__name__}: {exc}"
            problem = f"model '{entry.name}' failed to load{_from(entry)}: {entry.reason}"
            raise ModelLoadError(problem) from exc
        entry.model, entry.metadata, entry.state = model, metadata, ModelState.READY
        entry.load_seconds = seconds = time.perf_counter() - started
        if seconds < QUICK_LOAD:
            entry.slow_loads = 0
        elif entry.slow_loads is not None:
            entry.slow_loads = entry.slow_loads + 1 if entry.slow_loads + 1 < SLOW_LOADS else None
        count(MODEL_LOADS, entry.name, "ok")
        if logger.isEnabledFor(logging.INFO):
            logger.info("model %s loaded in %.2f s%s", _label(entry), seconds, _in_place(entry))
        entry.replaced = None

    @staticmethod
    async def _in_thread(model: Model) -> object:
        """``model.load()`` off the event loop, so the models already served keep answering while one
        loads (a repository's polls, a multiplexed model's first call). A model that loads within
        `QUICK_LOAD` seconds (see `SLOW_LOADS`) loads on the loop instead, where the hop to a thread
        would cost more (`_load_now`)."""
        return await asyncio.to_thread(model.load)

    async def _unload(self, entry: ModelEntry) -> None:
        """Unload ``entry`` once its calls have finished, and its load, if one is under way."""
        if entry.loading is not None:
            await asyncio.wait([entry.loading])  # its failure is its callers' to hear
        if self._begin_unload(entry):
            await self._finish_unload(entry)

    def _begin_unload(self, entry: ModelEntry) -> bool:
        """Stop admitting calls of ``entry``; False when it has no model or is being unloaded."""
        if entry.model is None or entry.state is ModelState.UNLOADING:
            return False
        entry.state = ModelState.UNLOADING
        return True

    async def _finish_unload(self, entry: ModelEntry, logged: bool = True) -> None:
        """Wait for the calls inside ``entry`` to finish (at most ``drain_seconds``), then unload.
        ``logged``: False when the load it makes room for logs it (`_make_room`)."""
        if entry.inflight:
            await self._drain(entry)
        model, entry.model, entry.metadata = entry.model, None, None
        try:
            unloading: object = None if model is None else model.unload()
            if unloading is not None:
                await resolve(unloading)
        finally:
            entry.state, entry.reason = ModelState.UNAVAILABLE, UNLOADED
            self._slots.give_back(entry)
            count(MODEL_UNLOADS, entry.name)
            if logged:
                logger.info("model %s unloaded", _label(entry))

    async def _drain(self, entry: ModelEntry) -> None:
        """Until the calls inside ``entry`` (some: `_finish_unload` checks) have finished, at most
        ``drain_seconds``."""
        entry.idle = asyncio.Event()
        try:
            await asyncio.wait_for(entry.idle.wait(), self.drain_seconds)
        except TimeoutError:
            logger.warning(
                "model %s still had %d call(s) after %g s; unloading it anyway",
                _label(entry),
                entry.inflight,
                self.drain_seconds,
            )
        finally:
            entry.idle = None

    # ---- a model repository ----

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

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        """Write model ``name`` into the repository (tritonclient's load with files)."""
        if self.source is None:
            raise ModelLoadError(
                f"cannot load model '{name}' from the request's config and files: this server has no "
                "model repository to write them into (serve one with --repository)"
            )
        self.source.write(name, config, files)


def _entry(served: ServedModel) -> ModelEntry:
    return ModelEntry(
        served.name,
        served.version,
        served.factory,
        served.source,
        served.fingerprint,
        served.cache,
        served.dialect,
    )


def _idle(entry: ModelEntry) -> bool:
    """Loaded, with no call inside it or waiting for it: unloading it for room costs no call."""
    return entry.state is ModelState.READY and not entry.inflight and not entry.waiting


def _loaded(entry: ModelEntry) -> bool:
    return entry.state is ModelState.READY


def _answer(waiters: list[asyncio.Future[None]], failure: BaseException | None) -> None:
    """Tell the calls waiting for a load how it ended: loaded (or not needed), failed, or cancelled."""
    for waiter in waiters:
        if waiter.done():  # the call was cancelled meanwhile
            continue
        if failure is None:
            waiter.set_result(None)
        elif isinstance(failure, asyncio.CancelledError):
            waiter.cancel()
        else:
            waiter.set_exception(failure)


def _retrieve(loading: asyncio.Task[None]) -> None:
    """Mark a load's failure as heard: the calls waiting for it raise it, and nobody else need."""
    if not loading.cancelled():
        loading.exception()


def _in_place(entry: ModelEntry) -> str:
    """How a load's log line names the model it unloaded to make room, if any."""
    replaced = entry.replaced
    if replaced is None:
        return ""
    return f", in place of model {_label(replaced)} (the least recently used, unloaded to make room)"


def _label(entry: ModelEntry) -> str:
    return entry.name if entry.version is None else f"{entry.name} (version {entry.version})"


def _from(entry: ModelEntry) -> str:
    return f" from {entry.source}" if entry.source else ""


def _version_key(version: str | None) -> tuple[int, int, str]:
    """Order versions numerically where they are numbers, so '10' is later than '9'."""
    if version is None:
        return (0, 0, "")
    return (1, int(version), "") if version.isdigit() else (1, -1, version)
