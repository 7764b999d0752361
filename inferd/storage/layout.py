"""Where things are in a cache folder, so that a reader of it needs no other module:

    entries/<key>/files/<name>   a complete fetch: the file, or the folder of files, a URI named
    entries/<key>/entry.json     its URI, version and size in bytes
    locks/<key>.use              held shared by each process using the entry, exclusively to evict it
    locks/<key>.get              held by the one process downloading the entry
    tmp/<key>.<random>/          a download in progress (or an entry being removed)
    evict.lock                   held by the one process evicting

``key`` hashes the URI and its version, so a changed object gets a new entry. Everything lives
under one root so that a finished download is renamed into place, which is atomic on one
filesystem: an entry exists complete or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from inferd.storage.locks import FileLock


def entry_key(uri: str, version: str | None) -> str:
    return hashlib.sha256(f"{uri}\n{version}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class EntryInfo:
    """What entry.json says of an entry."""

    uri: str
    version: str | None
    name: str
    size: int


class CacheLayout:
    """The paths of one cache folder (made on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries = root / "entries"
        self.locks = root / "locks"
        self.temporary = root / "tmp"
        for folder in (self.entries, self.locks, self.temporary):
            folder.mkdir(parents=True, exist_ok=True)

    def entry(self, key: str) -> Path:
        return self.entries / key

    def use_lock(self, key: str) -> FileLock:
        return FileLock(self.locks / f"{key}.use")

    def get_lock(self, key: str) -> FileLock:
        return FileLock(self.locks / f"{key}.get")

    def evict_lock(self) -> FileLock:
        return FileLock(self.root / "evict.lock")

    def new_temporary(self, key: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{key}.", dir=self.temporary))

    def keys(self) -> list[str]:
        return [path.name for path in self.entries.iterdir()]

    def used_keys(self) -> set[str]:
        """The keys that have lock files (an entry, or a fetch that failed or is under way)."""
        return {path.name.partition(".")[0] for path in self.locks.glob("*.use")}

    def temporaries(self) -> dict[Path, str]:
        """Each temporary folder, with the key it belongs to."""
        return {path: path.name.partition(".")[0] for path in self.temporary.iterdir()}


def write_info(entry: Path, info: EntryInfo) -> None:
    (entry / "entry.json").write_text(json.dumps(asdict(info)))


def read_info(entry: Path) -> EntryInfo:
    return EntryInfo(**json.loads((entry / "entry.json").read_text()))


def touch(entry: Path) -> None:
    """Mark the entry used now: eviction takes the least recently used first."""
    os.utime(entry)
