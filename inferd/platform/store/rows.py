"""How each kind of record maps onto its table (`_Kind`: columns are the record's dataclass fields),
values in and out of columns, and the few generic statements over a table (insert, update, get,
select, count) that every table's methods share.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Generic, TypeVar

from inferd.core.errors import NotFound
from inferd.platform.records import (
    Deployment,
    Endpoint,
    Replica,
    Run,
    RunState,
    Service,
    ServiceState,
    Trigger,
    Version,
)

R = TypeVar("R")


def _time_text(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _column(value: Any) -> Any:
    if isinstance(value, datetime):
        return _time_text(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, tuple, list)):
        return json.dumps(value, sort_keys=True)
    return value


@dataclass(frozen=True)
class _Kind(Generic[R]):
    """How one kind of record maps onto its table: the columns are the dataclass fields (less
    ``skip``), and ``decode`` turns the columns that are not plain SQLite values back."""

    name: str
    table: str
    record: type[R]
    decode: Mapping[str, Callable[[Any], Any]]
    skip: frozenset[str] = frozenset()

    @property
    def columns(self) -> tuple[str, ...]:
        return _field_names(self.record, self.skip)

    def from_row(self, row: Sequence[Any], **extra: Any) -> R:
        values = {
            column: self.decode.get(column, _same)(value)
            for column, value in zip(self.columns, row, strict=True)
        }
        return self.record(**values, **extra)


def _same(value: Any) -> Any:
    return value


def _field_names(record: Any, skip: frozenset[str]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(record) if f.name not in skip)


_TIMES = {"created_at": _time, "updated_at": _time, "finished_at": _time}
DEPLOYMENTS = _Kind("deployment", "deployments", Deployment, _TIMES)
VERSIONS = _Kind("version", "versions", Version, {**_TIMES, "environment": json.loads})
SERVICES = _Kind("service", "services", Service, {**_TIMES, "environment": json.loads, "state": ServiceState})
REPLICAS = _Kind("replica", "replicas", Replica, {"state": ServiceState})
ENDPOINTS = _Kind("endpoint", "endpoints", Endpoint, _TIMES, skip=frozenset({"routes"}))
RUNS = _Kind(
    "run",
    "runs",
    Run,
    {**_TIMES, "state": RunState, "parameters": json.loads, "inputs": lambda text: tuple(json.loads(text))},
)
TRIGGERS = _Kind("trigger", "triggers", Trigger, {**_TIMES, "enabled": bool, "parameters": json.loads})


def _insert(db: sqlite3.Connection, kind: _Kind[Any], record: Any) -> None:
    columns = kind.columns
    db.execute(
        f"INSERT INTO {kind.table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [_column(getattr(record, column)) for column in columns],
    )


def _update(db: sqlite3.Connection, kind: _Kind[Any], record: Any, columns: set[str]) -> None:
    if not columns:
        return
    ordered = sorted(columns)
    db.execute(
        f"UPDATE {kind.table} SET {', '.join(f'{column} = ?' for column in ordered)} WHERE id = ?",
        [*(_column(getattr(record, column)) for column in ordered), record.id],
    )


def _get(db: sqlite3.Connection, kind: _Kind[R], id: str, **extra: Any) -> R:
    row = db.execute(f"SELECT {', '.join(kind.columns)} FROM {kind.table} WHERE id = ?", (id,)).fetchone()
    if row is None:
        raise NotFound(f"{kind.name} {id!r} does not exist")
    return kind.from_row(row, **extra)


def _select(db: sqlite3.Connection, kind: _Kind[R], where: str = "", *args: Any) -> list[R]:
    clause = f" WHERE {where}" if where else ""
    rows = db.execute(
        f"SELECT {', '.join(kind.columns)} FROM {kind.table}{clause} ORDER BY rowid", args
    ).fetchall()
    return [kind.from_row(row) for row in rows]


def _count(db: sqlite3.Connection, table: str, where: str, *args: Any) -> int:
    count: int = db.execute(f"SELECT count(*) FROM {table} WHERE {where}", args).fetchone()[0]
    return count
