"""What the storage tests run in other (spawned) processes: fetches through a cache of their own."""

from __future__ import annotations

from multiprocessing.synchronize import Event
from pathlib import Path

from inferd.storage import ModelCache


def fetch(root: Path, uri: str) -> tuple[bool, str]:
    """Fetch ``uri`` as a worker of a server would; (from_cache, path)."""
    fetched = ModelCache(root, 10**9).fetch(uri)
    return fetched.from_cache, str(fetched.path)


def fetch_and_hold(root: Path, uri: str, fetched: Event, done: Event) -> None:
    """Fetch ``uri`` and keep using it until ``done`` is set."""
    cache = ModelCache(root, 10**9)
    cache.fetch(uri)
    fetched.set()
    done.wait(30)
    cache.close()
