"""A registered model's entry (`ModelEntry`): one (name, version), its factory and where it came
from, its lifecycle state (`ModelState`) and the bookkeeping of its calls and loads; with the
registry's logger and the helpers that name an entry and order its versions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from inferd.core.model import Model
from inferd.core.model_stats import ModelStats
from inferd.core.repository import ModelFactory, ServedModel
from inferd.core.types import ModelMetadata

logger = logging.getLogger("inferd.registry")

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
    #: Triton's statistics of its calls (`inferd.core.model_stats`), kept across its reloads.
    stats: ModelStats = field(default_factory=ModelStats, repr=False)
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


def _label(entry: ModelEntry) -> str:
    return entry.name if entry.version is None else f"{entry.name} (version {entry.version})"


def _from(entry: ModelEntry) -> str:
    return f" from {entry.source}" if entry.source else ""


def _version_key(version: str | None) -> tuple[int, int, str]:
    """Order versions numerically where they are numbers, so '10' is later than '9'."""
    if version is None:
        return (0, 0, "")
    return (1, int(version), "") if version.isdigit() else (1, -1, version)
