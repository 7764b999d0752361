"""ABEJA's datasets and their items, kept in two tables of the platform's SQLite file.

A dataset is a name, a type (``classification``, ``detection``...) and its ``props`` (the categories and
labels its items' attributes use); an item is its ``source_data`` (where its data is: a DataLake file
as ``datalake://CHANNEL/FILE``, or a URL) and its ``attributes`` (the annotations), both kept as the
JSON they arrived as. Items are numbered by SQLite (``AUTOINCREMENT``: a number is never given twice,
so a page token that names the last item read stays right while items come and go) and leave with
their dataset (``ON DELETE CASCADE``).

The tables are this module's own (``CREATE TABLE IF NOT EXISTS`` when it opens the file), not one of
`inferd.platform.store`'s migrations, which stay the store's. Each call is one short transaction on
a connection of its own, as `inferd.platform.abeja.channel_index` does.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inferd.core.errors import Conflict, NotFound

SCHEMA = """
CREATE TABLE IF NOT EXISTS abeja_datasets (
    dataset_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    props TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS abeja_dataset_items (
    item_id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL REFERENCES abeja_datasets (dataset_id) ON DELETE CASCADE,
    source_data TEXT NOT NULL,
    attributes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS abeja_dataset_items_of ON abeja_dataset_items (dataset_id, item_id);
"""
#: Tries at a free 13-digit dataset id before giving up.
_DRAWS = 16
#: The largest item id SQLite keeps (a signed 64-bit integer); a longer number names no item.
_LARGEST_ID = 2**63 - 1


@dataclass(frozen=True)
class DatasetRow:
    dataset_id: str
    name: str
    type: str
    props: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    #: How many items it has.
    total_count: int = 0


@dataclass(frozen=True)
class ItemRow:
    dataset_id: str
    item_id: int
    source_data: list[Any]
    attributes: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class NewItem:
    source_data: list[Any]
    attributes: dict[str, Any]


def item_number(raw: str) -> int:
    """An item id from a path: a whole number SQLite can hold, else no item has it (404)."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or int(raw) > _LARGEST_ID:
        raise NotFound(f"dataset item {raw!r} does not exist")
    return int(raw)


class DatasetStore:
    """The two tables in the SQLite file at ``path`` (the platform's store has created the file)."""

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA foreign_keys = ON")
        with self._lock:
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- datasets ----

    def create(self, name: str, kind: str, props: dict[str, Any]) -> DatasetRow:
        moment = _now()
        for _ in range(_DRAWS):
            dataset_id = str(secrets.randbelow(9 * 10**12) + 10**12)
            try:
                with self._lock:
                    self._db.execute(
                        "INSERT INTO abeja_datasets VALUES (?, ?, ?, ?, ?, ?)",
                        (dataset_id, name, kind, _json(props), moment.isoformat(), moment.isoformat()),
                    )
            except sqlite3.IntegrityError:
                continue
            return DatasetRow(dataset_id, name, kind, props, moment, moment)
        raise Conflict("no free dataset id was found; try again")

    def dataset(self, dataset_id: str) -> DatasetRow:
        with self._lock:
            row = self._db.execute(
                f"{_DATASETS} WHERE d.dataset_id = ? GROUP BY d.dataset_id", (dataset_id,)
            ).fetchone()
        if row is None:
            raise NotFound(f"dataset {dataset_id!r} does not exist")
        return _dataset(row)

    def datasets(self, after: str | None, limit: int) -> list[DatasetRow]:
        """Up to ``limit`` datasets by id, those after ``after`` when given."""
        with self._lock:
            rows = self._db.execute(
                f"{_DATASETS} WHERE d.dataset_id > ? GROUP BY d.dataset_id ORDER BY d.dataset_id LIMIT ?",
                (after or "", limit),
            ).fetchall()
        return [_dataset(row) for row in rows]

    def delete(self, dataset_id: str) -> DatasetRow:
        """Forget the dataset and its items; answers it as it was."""
        gone = self.dataset(dataset_id)
        with self._lock:
            self._db.execute("DELETE FROM abeja_datasets WHERE dataset_id = ?", (dataset_id,))
        return gone

    # ---- items ----

    def add_items(self, dataset_id: str, items: Sequence[NewItem]) -> list[ItemRow]:
        """The items, added in one transaction (all or none)."""
        self.dataset(dataset_id)
        moment = _now().isoformat()
        made: list[ItemRow] = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for item in items:
                    cursor = self._db.execute(
                        "INSERT INTO abeja_dataset_items (dataset_id, source_data, attributes, "
                        "created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                        (dataset_id, _json(item.source_data), _json(item.attributes), moment, moment),
                    )
                    assert cursor.lastrowid is not None
                    made.append(
                        ItemRow(
                            dataset_id,
                            cursor.lastrowid,
                            item.source_data,
                            item.attributes,
                            datetime.fromisoformat(moment),
                            datetime.fromisoformat(moment),
                        )
                    )
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.IntegrityError):  # the dataset was deleted meanwhile
                    raise NotFound(f"dataset {dataset_id!r} does not exist") from None
                raise
        return made

    def item(self, dataset_id: str, item_id: int) -> ItemRow:
        with self._lock:
            row = self._db.execute(
                f"{_ITEMS} WHERE dataset_id = ? AND item_id = ?", (dataset_id, item_id)
            ).fetchone()
        if row is None:
            self.dataset(dataset_id)  # which of the two is missing
            raise NotFound(f"dataset {dataset_id!r} has no item {item_id}")
        return _item(row)

    def items(self, dataset_id: str, after: int, limit: int) -> list[ItemRow]:
        """Up to ``limit`` of the dataset's items numbered above ``after``, in order."""
        with self._lock:
            rows = self._db.execute(
                f"{_ITEMS} WHERE dataset_id = ? AND item_id > ? ORDER BY item_id LIMIT ?",
                (dataset_id, after, limit),
            ).fetchall()
        return [_item(row) for row in rows]

    def set_attributes(self, dataset_id: str, changes: Iterable[tuple[int, dict[str, Any]]]) -> list[ItemRow]:
        """Replace the attributes of items in one transaction: every item must exist, else none changes."""
        self.dataset(dataset_id)
        moment = _now().isoformat()
        changed: list[int] = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for item_id, attributes in changes:
                    cursor = self._db.execute(
                        "UPDATE abeja_dataset_items SET attributes = ?, updated_at = ? "
                        "WHERE dataset_id = ? AND item_id = ?",
                        (_json(attributes), moment, dataset_id, item_id),
                    )
                    if cursor.rowcount != 1:
                        raise NotFound(f"dataset {dataset_id!r} has no item {item_id}")
                    changed.append(item_id)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return [self.item(dataset_id, item_id) for item_id in changed]

    def delete_item(self, dataset_id: str, item_id: int) -> ItemRow:
        gone = self.item(dataset_id, item_id)
        with self._lock:
            self._db.execute(
                "DELETE FROM abeja_dataset_items WHERE dataset_id = ? AND item_id = ?", (dataset_id, item_id)
            )
        return gone


_DATASETS = (
    "SELECT d.dataset_id, d.name, d.type, d.props, d.created_at, d.updated_at, COUNT(i.item_id) "
    "FROM abeja_datasets d LEFT JOIN abeja_dataset_items i ON i.dataset_id = d.dataset_id"
)
_ITEMS = (
    "SELECT dataset_id, item_id, source_data, attributes, created_at, updated_at FROM abeja_dataset_items"
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dataset(row: tuple[Any, ...]) -> DatasetRow:
    return DatasetRow(
        row[0],
        row[1],
        row[2],
        json.loads(row[3]),
        datetime.fromisoformat(row[4]),
        datetime.fromisoformat(row[5]),
        row[6],
    )


def _item(row: tuple[Any, ...]) -> ItemRow:
    return ItemRow(
        row[0],
        row[1],
        json.loads(row[2]),
        json.loads(row[3]),
        datetime.fromisoformat(row[4]),
        datetime.fromisoformat(row[5]),
    )
