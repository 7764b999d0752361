"""The model cache: a remote URI is downloaded once into a folder every worker process of a server
shares, and found there by the next fetch, in this process or another.

A fetch holds its entry's use lock (shared) from then on, until `ModelCache.release` or the process
ends: eviction, which needs that lock exclusively, never removes a model a live process has fetched.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from inferd.core.metrics import MODEL_FETCHED_BYTES, MODEL_FETCHES
from inferd.core.settings import DialectSettings
from inferd.storage.errors import StorageNotFound
from inferd.storage.housekeeping import evict, remove_leftovers
from inferd.storage.layout import CacheLayout, EntryInfo, entry_key, touch, write_info
from inferd.storage.locations import local_path, scheme
from inferd.storage.locks import FileLock
from inferd.storage.remote import Listing, Remote

logger = logging.getLogger("inferd.storage")

#: How long the first request to a store may take before the store counts as unreachable.
CHECK_SECONDS = 10.0


@dataclass(frozen=True)
class Fetched:
    """Where a fetched URI is on this machine."""

    path: Path  # the file (for an object) or folder (for a prefix or folder)
    uri: str
    version: str | None  # ETag, generation... (a digest of them all for a folder); None for local paths
    from_cache: bool  # True when no download happened in this call


class ModelCache:
    """Remote models fetched into ``root``, kept to ``max_bytes`` by evicting the least recently used
    entries that no process uses. Fetches in one process run one at a time."""

    def __init__(self, root: Path, max_bytes: int, *, check_seconds: float = CHECK_SECONDS) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._check_seconds = check_seconds
        self._pins: dict[str, FileLock] = {}  # entry key → its use lock, held shared
        self._keys: dict[str, str] = {}  # URI → the key it was last fetched under
        self._mutex = threading.Lock()

    def fetch(self, uri: str) -> Fetched:
        """A local path as it is (it must exist); a remote URI from the cache, downloaded first when
        the cache has no entry of its current version."""
        path = local_path(uri)
        if path is not None:
            if not path.exists():
                raise StorageNotFound(uri, "no such file or folder")
            return Fetched(path, uri, None, from_cache=True)
        kind = scheme(uri) or ""
        try:
            found = self._fetched(uri, kind, Remote(uri, kind, self._check_seconds))
        except BaseException:
            MODEL_FETCHES.labels(kind, "error").inc()
            raise
        MODEL_FETCHES.labels(kind, "cache" if found.from_cache else "download").inc()
        return found

    def _fetched(self, uri: str, kind: str, remote: Remote) -> Fetched:
        listing = remote.listing()
        with self._mutex:
            layout = CacheLayout(self.root)
            remove_leftovers(layout)
            key = entry_key(uri, listing.version)
            downloaded = self._pinned(layout, key, remote, listing)
            self._repin(uri, key)
            evict(layout, self.max_bytes, keep={key, *self._pins})
        if downloaded:
            MODEL_FETCHED_BYTES.labels(kind).inc(listing.size)
            logger.info(
                "downloaded %s (%d bytes, version %s) into the model cache",
                uri,
                listing.size,
                listing.version,
            )
        return Fetched(layout.entry(key) / "files" / listing.name, uri, listing.version, not downloaded)

    def _repin(self, uri: str, key: str) -> None:
        """``uri`` is now ``key``: the version it was fetched as before (a polled repository that
        changed) is no longer held here, so it can be evicted once no process uses it."""
        previous = self._keys.get(uri)
        self._keys[uri] = key
        if previous is not None and previous != key and previous not in self._keys.values():
            self._pins.pop(previous).release()

    def release(self, uri: str) -> None:
        """Let other processes evict what ``uri`` was fetched as (its files may then go)."""
        with self._mutex:
            key = self._keys.pop(uri, None)
            if key is not None and key not in self._keys.values():
                self._pins.pop(key).release()

    def close(self) -> None:
        """Release every fetched entry."""
        with self._mutex:
            for pin in self._pins.values():
                pin.release()
            self._pins.clear()
            self._keys.clear()

    def _pinned(self, layout: CacheLayout, key: str, remote: Remote, listing: Listing) -> bool:
        """Hold the entry's use lock and make sure the entry exists; True if this call downloaded it.
        Of several processes fetching one key, the first takes its get lock and downloads; the others
        wait on that lock, then find the entry."""
        if key in self._pins:
            touch(layout.entry(key))
            return False
        pin = layout.use_lock(key)
        pin.acquire(shared=True)
        try:
            downloaded = self._ensure(layout, key, remote, listing)
        except BaseException:
            pin.release()
            raise
        self._pins[key] = pin
        return downloaded

    def _ensure(self, layout: CacheLayout, key: str, remote: Remote, listing: Listing) -> bool:
        entry = layout.entry(key)
        if not entry.exists():
            getter = layout.get_lock(key)
            getter.acquire()
            try:
                if not entry.exists():
                    _download(layout, key, remote, listing)
                    return True
            finally:
                getter.release()
        touch(entry)
        return False


#: Bytes in the MiB of ``model_cache_size``.
MIB = 1024 * 1024


def cache_of(settings: DialectSettings) -> ModelCache:
    """The model cache the settings name, at an absolute path: a model that changes the working
    directory as it loads (Cortex's do) must not move it for the next fetch."""
    return ModelCache(settings.model_cache.resolve(), settings.model_cache_size * MIB)


def _download(layout: CacheLayout, key: str, remote: Remote, listing: Listing) -> None:
    """Download into a temporary folder, then rename it into place: on any failure the folder goes and
    no entry exists."""
    temporary = layout.new_temporary(key)
    try:
        remote.download(listing, temporary / "files")
        write_info(temporary, EntryInfo(remote.uri, listing.version, listing.name, listing.size))
        os.rename(temporary, layout.entry(key))
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
