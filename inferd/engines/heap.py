"""The garbage collector over a server's start-up (issue 26, cold start).

Nearly everything a server process allocates while it starts (modules, classes, settings, the app)
lives as long as the process: each full collection the collector runs meanwhile walks all of it for
nothing, and full collections come more often as the heap grows. So the serving process starts with
the collector paused (`pause`, the first thing ``inferd serve`` does), and hands inferd's own
start-up to `freeze` before the models load: its objects move out of every later collection, and
the collector runs again while the user's ``load()`` runs, so a model that makes garbage while it
loads gets it collected as usual. Once the server answers, `settle` collects what the load left and
freezes the rest as well (see `inferd.engines.local`).
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Pause the collector until `resume_frozen` (does nothing when it is already off: then whoever
    turned it off decides when it runs again)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_frozen() -> None:
    """Freeze what is allocated so far (inferd's start-up) and turn the collector back on, if `pause`
    turned it off."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False


def settle() -> None:
    """Collect the garbage start-up left, then freeze what remains: it lives as long as the process,
    and walking all of it took ~17 ms each time (about every 6 s while models loaded on demand come
    and go), a pause every call in flight waits through."""
    resume_frozen()
    gc.collect()
    gc.freeze()
