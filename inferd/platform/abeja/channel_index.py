"""What the DataLake folder's files cannot say of themselves: a channel's name, description and
archived flag, and an uploaded file's content type, metadata and upload time.

Kept in two tables of the platform's SQLite file (migration 6 of `inferd.platform.store`), beside the
folder, which stays the truth of what exists: a channel is a folder, a file a file in it. A folder or
file put there by hand (or written by a run) has no row and reads with defaults (its name, the content
type of its extension, its modification time). Deleting a file through the API removes its row; a
row whose file was removed by hand is not read until a file of that name appears again, and an upload
of that name replaces it. Each call is one short transaction on a connection of its own, as
`inferd.platform.abeja.extras` does.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ChannelRow:
    name: str
    description: str
    archived: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class FileRow:
    content_type: str
    uploaded_at: datetime
    metadata: dict[str, str] = field(default_factory=dict)


class ChannelIndex:
    """The two tables in the SQLite file at ``path`` (the store has created and migrated it)."""

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- channels ----

    def put_channel(self, channel_id: str, row: ChannelRow) -> None:
        self._run(
            "INSERT OR REPLACE INTO abeja_channels VALUES (?, ?, ?, ?, ?, ?)",
            channel_id,
            row.name,
            row.description,
            int(row.archived),
            row.created_at.isoformat(),
            row.updated_at.isoformat(),
        )

    def channel(self, channel_id: str) -> ChannelRow | None:
        row = self._one(
            "SELECT name, description, archived, created_at, updated_at FROM abeja_channels "
            "WHERE channel_id = ?",
            channel_id,
        )
        if row is None:
            return None
        return ChannelRow(
            row[0], row[1], bool(row[2]), datetime.fromisoformat(row[3]), datetime.fromisoformat(row[4])
        )

    def forget_channel(self, channel_id: str) -> None:
        self._run("DELETE FROM abeja_channels WHERE channel_id = ?", channel_id)

    # ---- files ----

    def put_file(self, channel_id: str, file_id: str, row: FileRow) -> None:
        self._run(
            "INSERT OR REPLACE INTO abeja_files VALUES (?, ?, ?, ?, ?)",
            channel_id,
            file_id,
            row.content_type,
            json.dumps(row.metadata, sort_keys=True),
            row.uploaded_at.isoformat(),
        )

    def file(self, channel_id: str, file_id: str) -> FileRow | None:
        row = self._one(
            "SELECT content_type, uploaded_at, metadata FROM abeja_files "
            "WHERE channel_id = ? AND file_id = ?",
            channel_id,
            file_id,
        )
        return None if row is None else _file_row(row)

    def files(self, channel_id: str) -> dict[str, FileRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT file_id, content_type, uploaded_at, metadata FROM abeja_files WHERE channel_id = ?",
                (channel_id,),
            ).fetchall()
        return {row[0]: _file_row(row[1:]) for row in rows}

    def forget_file(self, channel_id: str, file_id: str) -> None:
        self._run("DELETE FROM abeja_files WHERE channel_id = ? AND file_id = ?", channel_id, file_id)

    def _run(self, statement: str, *values: object) -> None:
        with self._lock:
            self._db.execute(statement, values)

    def _one(self, select: str, *values: object) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(select, values).fetchone()
        return row


def _file_row(row: tuple[Any, ...]) -> FileRow:
    metadata: Mapping[str, str] = json.loads(row[2])
    return FileRow(row[0], datetime.fromisoformat(row[1]), dict(metadata))
