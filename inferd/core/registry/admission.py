"""Admission: a model's load takes one of ``max_loaded`` slots (`inferd.core.slots`), unloading the
least recently used idle model to make room, or waiting for one to go idle; the calls of a model
being loaded share its load (`ModelRegistry.ensure_loaded`), and a call of a loaded one marks
it used (`touch`).
"""

from __future__ import annotations

import asyncio

from inferd.core.registry.entries import NOT_LOADED, ModelEntry, ModelState, _label, logger
from inferd.core.registry.loading import Loading


class Admission(Loading):
    """How loads take their slots, and how calls wait for the load of their model."""

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

    async def _load(self, entry: ModelEntry) -> None:
        """Load ``entry`` (an explicit load, ``_changing`` held): after the load of it under way, if
        any (its failure is this one's), and in a slot of its own."""
        if entry.loading is not None:
            await asyncio.shield(entry.loading)
        if entry.state is not ModelState.READY:
            await asyncio.shield(self._start_load(entry, for_calls=False))


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
