"""ABEJA training's records: job definitions, their numbered versions (an archive of the project, a
handler, an image, an environment, datasets), their jobs (status, times, reason, statistics) and
their training models (an archive, what a service's ``ABEJA_TRAINING_RESULT_DIR`` is made of).

Kept in a SQLite file of their own beside the platform's (``DATA_DIR/platform/abeja-training.sqlite``):
nothing of it is a deployment, version or service of `inferd.platform.store`, so it needs none of that
store's migrations, and the two files change independently. Each call is one short transaction on one
connection shared under a lock, as `inferd.platform.abeja.extras` does. Version archives are bundles
of a store of their own (`inferd.platform.abeja.training.TrainingAPI`), named here by digest.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inferd.core.errors import Conflict, NotFound

#: A job's statuses, as ABEJA names them; the last three are final.
PENDING, ACTIVE, COMPLETE, FAILED, STOPPED = "Pending", "Active", "Complete", "Failed", "Stopped"
FINAL = (COMPLETE, FAILED, STOPPED)
#: Statistics kept per job (the last ones are its ``statistics``); older ones are dropped.
MAX_HISTORY = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS definitions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, archived INTEGER NOT NULL,
    created_at TEXT NOT NULL, modified_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS versions (
    definition_id TEXT NOT NULL REFERENCES definitions(id) ON DELETE CASCADE,
    number INTEGER NOT NULL, handler TEXT NOT NULL, image TEXT NOT NULL, environment TEXT NOT NULL,
    datasets TEXT NOT NULL, description TEXT NOT NULL, digest TEXT NOT NULL, archived INTEGER NOT NULL,
    created_at TEXT NOT NULL, modified_at TEXT NOT NULL, PRIMARY KEY (definition_id, number));
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, definition_id TEXT NOT NULL REFERENCES definitions(id) ON DELETE CASCADE,
    version INTEGER NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL, description TEXT,
    instance_type TEXT NOT NULL, environment TEXT NOT NULL, datasets TEXT NOT NULL,
    export_log INTEGER NOT NULL, archived INTEGER NOT NULL, statistics TEXT, history TEXT NOT NULL,
    created_at TEXT NOT NULL, modified_at TEXT NOT NULL, start_time TEXT, completion_time TEXT,
    api_url TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    id TEXT PRIMARY KEY, definition_id TEXT NOT NULL REFERENCES definitions(id) ON DELETE CASCADE,
    training_job_id TEXT, description TEXT NOT NULL, user_parameters TEXT NOT NULL, digest TEXT NOT NULL,
    archived INTEGER NOT NULL, created_at TEXT NOT NULL, modified_at TEXT NOT NULL);
"""


def now() -> datetime:
    return datetime.now(timezone.utc)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


@dataclass(frozen=True)
class Definition:
    id: str
    name: str
    archived: bool
    created_at: datetime
    modified_at: datetime


@dataclass(frozen=True)
class TrainingVersion:
    definition_id: str
    number: int
    handler: str
    image: str
    environment: dict[str, str]
    datasets: dict[str, str]
    description: str
    digest: str
    archived: bool
    created_at: datetime
    modified_at: datetime


@dataclass(frozen=True)
class TrainingJob:
    id: str
    definition_id: str
    version: int
    status: str
    reason: str
    description: str | None
    instance_type: str
    environment: dict[str, str]
    datasets: dict[str, str]
    export_log: bool
    archived: bool
    statistics: dict[str, Any] | None
    created_at: datetime
    modified_at: datetime
    start_time: datetime | None = None
    completion_time: datetime | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    #: Where its SDK calls the platform back (``ABEJA_API_URL``): the URL its creator reached.
    api_url: str = ""


@dataclass(frozen=True)
class TrainingModel:
    id: str
    definition_id: str
    training_job_id: str | None
    description: str
    user_parameters: dict[str, str]
    digest: str
    archived: bool
    created_at: datetime
    modified_at: datetime


class TrainingStore:
    """The records in the SQLite file at ``path`` (created when missing)."""

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA journal_mode = WAL")
        # in WAL mode a commit then waits for no fsync (the file stays consistent; a power cut may lose
        # the last records, a crash of the process none): a job's two records before it starts (its
        # row, then Active) cost no disk flush each (bench/training_startup.py)
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- definitions ----

    def add_definition(self, name: str) -> Definition:
        moment = now()
        for _ in range(20):
            found = Definition(_new_id(), name, False, moment, moment)
            try:
                self._run(
                    "INSERT INTO definitions VALUES (?, ?, 0, ?, ?)",
                    found.id,
                    name,
                    moment.isoformat(),
                    moment.isoformat(),
                )
            except sqlite3.IntegrityError:
                if self._one("SELECT 1 FROM definitions WHERE name = ?", name):
                    raise Conflict(f"job definition {name!r} exists already") from None
                continue
            return found
        raise Conflict("no free job definition id was found; try again")

    def definition(self, name_or_id: str) -> Definition:
        row = self._one(
            "SELECT id, name, archived, created_at, modified_at FROM definitions WHERE name = ? OR id = ? "
            "ORDER BY name = ? DESC",
            name_or_id,
            name_or_id,
            name_or_id,
        )
        if row is None:
            raise NotFound(f"job definition {name_or_id!r} does not exist")
        return Definition(row[0], row[1], bool(row[2]), _stamp(row[3]), _stamp(row[4]))

    def definitions(self) -> list[Definition]:
        rows = self._all(
            "SELECT id, name, archived, created_at, modified_at FROM definitions ORDER BY created_at"
        )
        return [Definition(r[0], r[1], bool(r[2]), _stamp(r[3]), _stamp(r[4])) for r in rows]

    def set_definition_archived(self, definition_id: str, archived: bool) -> None:
        self._run(
            "UPDATE definitions SET archived = ?, modified_at = ? WHERE id = ?",
            int(archived),
            now().isoformat(),
            definition_id,
        )

    def delete_definition(self, definition_id: str) -> None:
        self._run("DELETE FROM definitions WHERE id = ?", definition_id)

    # ---- versions ----

    def add_version(
        self,
        definition_id: str,
        handler: str,
        image: str,
        environment: dict[str, str],
        datasets: dict[str, str],
        description: str,
        digest: str,
    ) -> TrainingVersion:
        moment = now().isoformat()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._db.execute(
                    "SELECT COALESCE(MAX(number), 0) FROM versions WHERE definition_id = ?", (definition_id,)
                ).fetchone()
                values = (
                    definition_id,
                    last + 1,
                    handler,
                    image,
                    json.dumps(environment, sort_keys=True),
                    json.dumps(datasets, sort_keys=True),
                    description,
                    digest,
                    0,
                    moment,
                    moment,
                )
                self._db.execute(f"INSERT INTO versions VALUES ({', '.join('?' * len(values))})", values)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self.version(definition_id, last + 1)

    def version(self, definition_id: str, number: int) -> TrainingVersion:
        row = self._one(f"{_VERSION} WHERE definition_id = ? AND number = ?", definition_id, number)
        if row is None:
            raise NotFound(f"job definition version {number} does not exist")
        return _version(row)

    def versions(self, definition_id: str) -> list[TrainingVersion]:
        return [
            _version(r)
            for r in self._all(f"{_VERSION} WHERE definition_id = ? ORDER BY number", definition_id)
        ]

    def update_version(self, version: TrainingVersion) -> TrainingVersion:
        self._run(
            "UPDATE versions SET description = ?, archived = ?, modified_at = ? "
            "WHERE definition_id = ? AND number = ?",
            version.description,
            int(version.archived),
            now().isoformat(),
            version.definition_id,
            version.number,
        )
        return self.version(version.definition_id, version.number)

    def delete_version(self, definition_id: str, number: int) -> None:
        self._run("DELETE FROM versions WHERE definition_id = ? AND number = ?", definition_id, number)

    def names_bundle(self, digest: str) -> bool:
        named = self._one("SELECT 1 FROM versions WHERE digest = ? LIMIT 1", digest)
        return (
            named is not None
            or self._one("SELECT 1 FROM models WHERE digest = ? LIMIT 1", digest) is not None
        )

    # ---- jobs ----

    def add_job(self, job: TrainingJob) -> TrainingJob:
        for _ in range(20):
            chosen = replace(job, id=_new_id())
            try:
                self._run(
                    "INSERT INTO jobs VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '[]', ?, ?, NULL, NULL, ?)",
                    chosen.id,
                    chosen.definition_id,
                    chosen.version,
                    chosen.status,
                    chosen.reason,
                    chosen.description,
                    chosen.instance_type,
                    json.dumps(chosen.environment, sort_keys=True),
                    json.dumps(chosen.datasets, sort_keys=True),
                    int(chosen.export_log),
                    int(chosen.archived),
                    chosen.created_at.isoformat(),
                    chosen.modified_at.isoformat(),
                    chosen.api_url,
                )
            except sqlite3.IntegrityError:
                continue
            return self.job(chosen.id)
        raise Conflict("no free training job id was found; try again")

    def job(self, job_id: str, with_history: bool = False) -> TrainingJob:
        row = self._one(f"{_JOB} WHERE id = ?", job_id)
        if row is None:
            raise NotFound(f"training job {job_id!r} does not exist")
        found = _job(row)
        if with_history:
            history = self._one("SELECT history FROM jobs WHERE id = ?", job_id)
            found = replace(found, history=json.loads(history[0]) if history else [])
        return found

    def jobs(self, definition_id: str | None = None) -> list[TrainingJob]:
        if definition_id is None:
            return [_job(r) for r in self._all(f"{_JOB} ORDER BY created_at")]
        return [
            _job(r) for r in self._all(f"{_JOB} WHERE definition_id = ? ORDER BY created_at", definition_id)
        ]

    def set_status(self, job_id: str, status: str, reason: str = "") -> TrainingJob:
        """Move a job to ``status`` (its start or completion time set with it); a final job stays as it
        is (Conflict)."""
        moment = now().isoformat()
        with self._lock:
            row = self._db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise NotFound(f"training job {job_id!r} does not exist")
            if row[0] in FINAL:
                raise Conflict(f"training job {job_id} is {row[0]} already")
            extra = (
                ", start_time = ?" if status == ACTIVE else ", completion_time = ?" if status in FINAL else ""
            )
            values: list[object] = [status, reason, moment, *([moment] if extra else []), job_id]
            self._db.execute(
                f"UPDATE jobs SET status = ?, reason = ?, modified_at = ?{extra} WHERE id = ?", values
            )
        return self.job(job_id)

    def set_job_archived(self, job_id: str, archived: bool) -> None:
        self._run(
            "UPDATE jobs SET archived = ?, modified_at = ? WHERE id = ?",
            int(archived),
            now().isoformat(),
            job_id,
        )

    def add_statistics(self, job_id: str, statistics: dict[str, Any]) -> None:
        """The job's last statistics, appended to its history too (the oldest dropped past
        `MAX_HISTORY`)."""
        with self._lock:
            row = self._db.execute("SELECT history FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise NotFound(f"training job {job_id!r} does not exist")
            history = [*json.loads(row[0]), {"at": now().isoformat(), "statistics": statistics}][
                -MAX_HISTORY:
            ]
            self._db.execute(
                "UPDATE jobs SET statistics = ?, history = ?, modified_at = ? WHERE id = ?",
                (json.dumps(statistics), json.dumps(history), now().isoformat(), job_id),
            )

    # ---- training models ----

    def add_model(
        self,
        definition_id: str,
        training_job_id: str | None,
        description: str,
        user_parameters: dict[str, str],
        digest: str,
    ) -> TrainingModel:
        moment = now().isoformat()
        for _ in range(20):
            model_id = _new_id()
            try:
                self._run(
                    "INSERT INTO models VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
                    model_id,
                    definition_id,
                    training_job_id,
                    description,
                    json.dumps(user_parameters, sort_keys=True),
                    digest,
                    moment,
                    moment,
                )
            except sqlite3.IntegrityError:
                continue
            return self.model(model_id)
        raise Conflict("no free training model id was found; try again")

    def model(self, model_id: str) -> TrainingModel:
        row = self._one(f"{_MODEL} WHERE id = ?", model_id)
        if row is None:
            raise NotFound(f"training model {model_id!r} does not exist")
        return _model(row)

    def models(self, definition_id: str) -> list[TrainingModel]:
        return [
            _model(r)
            for r in self._all(f"{_MODEL} WHERE definition_id = ? ORDER BY created_at", definition_id)
        ]

    def update_model(self, model: TrainingModel) -> TrainingModel:
        self._run(
            "UPDATE models SET description = ?, archived = ?, modified_at = ? WHERE id = ?",
            model.description,
            int(model.archived),
            now().isoformat(),
            model.id,
        )
        return self.model(model.id)

    # ---- inside ----

    def _run(self, statement: str, *values: object) -> None:
        with self._lock:
            self._db.execute(statement, values)

    def _one(self, select: str, *values: object) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(select, values).fetchone()
        return row

    def _all(self, select: str, *values: object) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._db.execute(select, values).fetchall())


_VERSION = (
    "SELECT definition_id, number, handler, image, environment, datasets, description, digest, archived, "
    "created_at, modified_at FROM versions"
)
_JOB = (
    "SELECT id, definition_id, version, status, reason, description, instance_type, environment, datasets, "
    "export_log, archived, statistics, created_at, modified_at, start_time, completion_time, api_url "
    "FROM jobs"
)


_MODEL = (
    "SELECT id, definition_id, training_job_id, description, user_parameters, digest, archived, created_at, "
    "modified_at FROM models"
)


def _model(r: tuple[Any, ...]) -> TrainingModel:
    return TrainingModel(
        r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], bool(r[6]), _stamp(r[7]), _stamp(r[8])
    )


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _version(r: tuple[Any, ...]) -> TrainingVersion:
    return TrainingVersion(
        r[0],
        r[1],
        r[2],
        r[3],
        json.loads(r[4]),
        json.loads(r[5]),
        r[6],
        r[7],
        bool(r[8]),
        _stamp(r[9]),
        _stamp(r[10]),
    )


def _job(r: tuple[Any, ...]) -> TrainingJob:
    return TrainingJob(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        json.loads(r[7]),
        json.loads(r[8]),
        bool(r[9]),
        bool(r[10]),
        None if r[11] is None else json.loads(r[11]),
        _stamp(r[12]),
        _stamp(r[13]),
        _time(r[14]),
        _time(r[15]),
        api_url=r[16],
    )


def _new_id() -> str:
    """An id like ABEJA's: 13 digits."""
    return str(secrets.randbelow(9 * 10**12) + 10**12)
