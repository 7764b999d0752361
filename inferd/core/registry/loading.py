"""Loading one model (its factory built, ``load`` called on the event loop or in a thread, its
metadata read) and unloading one (its calls drained, ``unload`` called, its slot given back),
with the log lines and metrics of each.
"""

from __future__ import annotations

import asyncio
import logging
import time

from inferd.core.errors import ModelLoadError
from inferd.core.metrics import MODEL_LOADS, MODEL_UNLOADS, count
from inferd.core.model import Model, resolve
from inferd.core.registry.catalogue import Catalogue
from inferd.core.registry.entries import UNLOADED, ModelEntry, ModelState, _from, _label, logger
from inferd.core.user_code import is_own_failure, user_traceback

#: A model that loaded within this many seconds loads on the event loop the next time...
QUICK_LOAD = 0.005
#: ...until this many of its loads in a row took longer. One slow load is more often the machine
#: (another process on the core, a garbage collection) than the model; and back in a thread, a quick
#: load waits for the GIL behind the busy loop after each read (up to the 5 ms switch interval), so
#: it measured slow again and stayed there, holding up every other model's load meanwhile.
SLOW_LOADS = 2


class Loading(Catalogue):
    """How the registry loads and unloads one entry."""

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
            frames = user_traceback(exc)
            if frames is None:
                logger.exception("loading model %s failed%s", _label(entry), _in_place(entry))
            else:  # the model's own code raised: its frames, not inferd's way of reaching them
                logger.error("loading model %s failed%s\n%s", _label(entry), _in_place(entry), frames)
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


def _in_place(entry: ModelEntry) -> str:
    """How a load's log line names the model it unloaded to make room, if any."""
    replaced = entry.replaced
    if replaced is None:
        return ""
    return f", in place of model {_label(replaced)} (the least recently used, unloaded to make room)"
