"""Keeping a shared cache folder tidy: removing what killed processes left behind, and evicting the
least recently used entries down to the size limit. Both only touch what no live process holds."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from inferd.storage.layout import CacheLayout, read_info


def remove_leftovers(layout: CacheLayout) -> None:
    """Remove the temporary folders of downloads whose process died (a live download holds its key's
    get lock), and the lock files of fetches that failed before making an entry."""
    for folder, key in layout.temporaries().items():
        getter = layout.get_lock(key)
        if getter.acquire(blocking=False):
            shutil.rmtree(folder, ignore_errors=True)
            getter.release()
    for key in layout.used_keys():
        if not layout.entry(key).exists():
            with _unused(layout, key):
                pass


def evict(layout: CacheLayout, max_bytes: int, keep: set[str]) -> None:
    """Remove least recently used entries until the cache holds at most ``max_bytes``; never one in
    ``keep``, nor one any process uses. If another process is evicting, leave it the work."""
    evicting = layout.evict_lock()
    if not evicting.acquire(blocking=False):
        return
    try:
        entries = sorted(_entries(layout))
        total = sum(size for _, _, size in entries)
        for _, key, size in entries:
            if total <= max_bytes:
                break
            if key not in keep and _remove(layout, key):
                total -= size
    finally:
        evicting.release()


def _entries(layout: CacheLayout) -> Iterator[tuple[float, str, int]]:
    """(last use, key, bytes) of each entry."""
    for key in layout.keys():
        entry = layout.entry(key)
        try:
            yield entry.stat().st_mtime, key, read_info(entry).size
        except (OSError, ValueError, TypeError):
            continue  # removed meanwhile, or not an entry inferd wrote: not for us to count or remove


def _remove(layout: CacheLayout, key: str) -> bool:
    with _unused(layout, key) as unused:
        if unused:
            trash = layout.temporary / f"{key}.evicted-{uuid.uuid4().hex}"
            os.rename(layout.entry(key), trash)
            shutil.rmtree(trash, ignore_errors=True)
    return unused


@contextmanager
def _unused(layout: CacheLayout, key: str) -> Iterator[bool]:
    """Whether no process uses or downloads ``key``; while the block runs, none can start to, and
    after it the key's lock files are deleted (a process waiting on them locks new ones)."""
    user, getter = layout.use_lock(key), layout.get_lock(key)
    if not user.acquire(blocking=False):
        yield False
        return
    if not getter.acquire(blocking=False):
        user.release()
        yield False
        return
    try:
        yield True
    finally:
        getter.delete()
        user.delete()
