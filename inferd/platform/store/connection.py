"""The store's one SQLite connection: opening the file (WAL, foreign keys, migrations), the
transactions every public method runs in, and the lookups that several tables' methods share (a
deployment by id or name, a version of a deployment, one deployment's records of a kind).

Threads: one connection behind a lock. The control plane's calls are short, and SQLite serialises
writers anyway, so a connection per thread would add open files and WAL readers but no throughput.
Processes: WAL journal and a busy timeout, as `inferd.core.jobs` does.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from inferd.core.errors import InvalidInput, NotFound
from inferd.core.jobs import one_process_at_a_time
from inferd.platform.records import Deployment, Version, of_deployment
from inferd.platform.store.rows import DEPLOYMENTS, VERSIONS, R, _get, _Kind, _select
from inferd.platform.store.schema import MIGRATIONS, SchemaTooNew, _statements


class Connection:
    """The store's file at ``path``, open (the file and its folder are created), and its transactions.

    ``migrations`` is the schema to bring the file to; only tests pass a prefix of `MIGRATIONS`.
    """

    def __init__(
        self, path: Path, busy_timeout: float = 10.0, migrations: Sequence[str] = MIGRATIONS
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            with one_process_at_a_time(path):
                self._db.execute("PRAGMA journal_mode = WAL")
                self._migrate(migrations)
        except BaseException:
            self._db.close()
            raise

    @property
    def schema_version(self) -> int:
        with self._lock:
            version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        return version

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN IMMEDIATE") as db:
            yield db

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN") as db:
            yield db

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute(begin)
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _migrate(self, migrations: Sequence[str]) -> None:
        """Apply the scripts the file lacks, each with its version number in one transaction (a
        process that opens the file meanwhile waits, then finds them applied)."""
        for number, script in enumerate(migrations, start=1):
            with self._write() as db:
                if db.execute("PRAGMA user_version").fetchone()[0] >= number:
                    continue
                for statement in _statements(script):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")
        if self.schema_version > len(migrations):
            raise SchemaTooNew(
                f"{self.path} has schema version {self.schema_version}; this inferd knows versions up "
                f"to {len(migrations)}: use a newer inferd"
            )

    @staticmethod
    def _deployment(db: sqlite3.Connection, id_or_name: str) -> Deployment:
        row = db.execute(
            f"SELECT {', '.join(DEPLOYMENTS.columns)} FROM deployments WHERE id = ? OR name = ?",
            (id_or_name, id_or_name),
        ).fetchone()
        if row is None:
            raise NotFound(f"deployment {id_or_name!r} does not exist")
        return DEPLOYMENTS.from_row(row)

    def _listed(
        self, db: sqlite3.Connection, kind: _Kind[R], deployment_id: str | None, **equal: Any
    ) -> list[R]:
        """The records of ``kind`` of one deployment (by id or name; all with None) whose columns
        equal ``equal``'s values (a None value: any)."""
        wanted = {column: value for column, value in equal.items() if value is not None}
        if deployment_id is not None:
            wanted["deployment_id"] = self._deployment(db, deployment_id).id
        where = " AND ".join(f"{column} = ?" for column in wanted)
        return _select(db, kind, where, *wanted.values())

    @staticmethod
    def _version_of(db: sqlite3.Connection, deployment: Deployment, version_id: str) -> Version:
        return of_deployment(_get(db, VERSIONS, version_id), deployment, InvalidInput)
