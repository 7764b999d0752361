"""The platform's state: deployments, versions, services, endpoints, runs and triggers in one SQLite file.

Every public method is one transaction (``BEGIN IMMEDIATE`` for writes, so its checks and its writes
see the same data even when another process writes the file), and raises the typed errors of
`inferd.core.errors`: `NotFound` naming the kind and the id or name, `Conflict` for a duplicate or a
record still in use, `InvalidInput` for a bad value. Nothing is ever half-created.

Threads: one connection behind a lock. The control plane's calls are short, and SQLite serialises
writers anyway, so a connection per thread would add open files and WAL readers but no throughput.
Processes: WAL journal and a busy timeout, as `inferd.core.jobs` does.

Schema: ``PRAGMA user_version`` counts the applied entries of `MIGRATIONS`. A later change appends a
script (never edits one); opening an older file applies the missing ones, each in its own transaction.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Generic, TypeVar

from inferd.core.errors import Conflict, InvalidInput, NotFound
from inferd.core.jobs import one_process_at_a_time
from inferd.core.names import NAME_PATTERN, RULE
from inferd.platform.records import (
    Deployment,
    Endpoint,
    Replica,
    Route,
    Run,
    RunState,
    Service,
    ServiceState,
    Trigger,
    Version,
    new_id,
    now,
    of_deployment,
    replica_id,
)

#: The schema, one script per version; append only.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE deployments (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE versions (
        id TEXT PRIMARY KEY,
        deployment_id TEXT NOT NULL REFERENCES deployments (id),
        label TEXT NOT NULL,
        digest TEXT NOT NULL,
        size INTEGER NOT NULL,
        target TEXT NOT NULL,
        dialect TEXT NOT NULL,
        environment TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (deployment_id, label)
    );
    CREATE TABLE services (
        id TEXT PRIMARY KEY,
        deployment_id TEXT NOT NULL REFERENCES deployments (id),
        version_id TEXT NOT NULL REFERENCES versions (id),
        state TEXT NOT NULL,
        engine TEXT NOT NULL,
        workers INTEGER NOT NULL,
        environment TEXT NOT NULL,
        min_replicas INTEGER NOT NULL,
        max_replicas INTEGER NOT NULL,
        port INTEGER,
        pid INTEGER,
        reason TEXT NOT NULL,
        restarts INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX services_deployment ON services (deployment_id);
    CREATE INDEX services_version ON services (version_id);
    CREATE TABLE endpoints (
        id TEXT PRIMARY KEY,
        deployment_id TEXT NOT NULL REFERENCES deployments (id),
        name TEXT NOT NULL,
        shadow_service_id TEXT REFERENCES services (id),
        shadow_percent INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (deployment_id, name)
    );
    CREATE TABLE endpoint_routes (
        endpoint_id TEXT NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        service_id TEXT NOT NULL REFERENCES services (id),
        weight INTEGER NOT NULL,
        PRIMARY KEY (endpoint_id, service_id)
    );
    CREATE INDEX endpoint_routes_service ON endpoint_routes (service_id);
    CREATE TABLE triggers (
        id TEXT PRIMARY KEY,
        deployment_id TEXT NOT NULL REFERENCES deployments (id),
        version_id TEXT NOT NULL REFERENCES versions (id),
        input TEXT NOT NULL,
        output TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE trigger_seen (
        trigger_id TEXT NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        seen_at TEXT NOT NULL,
        PRIMARY KEY (trigger_id, key)
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        deployment_id TEXT NOT NULL REFERENCES deployments (id),
        version_id TEXT NOT NULL REFERENCES versions (id),
        state TEXT NOT NULL,
        inputs TEXT NOT NULL,
        output TEXT NOT NULL,
        parameters TEXT NOT NULL,
        reason TEXT NOT NULL,
        trigger_id TEXT REFERENCES triggers (id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX runs_deployment ON runs (deployment_id);
    """,
    # 2: what the ABEJA-compatible API keeps beside the records (`inferd.platform.abeja.extras`)
    """
    CREATE TABLE abeja_deployments (
        deployment_id TEXT PRIMARY KEY REFERENCES deployments (id) ON DELETE CASCADE,
        default_environment TEXT NOT NULL
    );
    CREATE TABLE abeja_versions (
        version_id TEXT PRIMARY KEY REFERENCES versions (id) ON DELETE CASCADE,
        image TEXT NOT NULL,
        handler TEXT NOT NULL,
        user_parameters TEXT NOT NULL
    );
    CREATE TABLE abeja_services (
        service_id TEXT PRIMARY KEY REFERENCES services (id) ON DELETE CASCADE,
        instance_type TEXT NOT NULL,
        instance_number INTEGER NOT NULL,
        enable_autoscale INTEGER NOT NULL,
        user_env_vars TEXT NOT NULL
    );
    """,
    # 3: a trigger's parameters, given to each run it starts (ABEJA's trigger environment)
    """
    ALTER TABLE triggers ADD COLUMN parameters TEXT NOT NULL DEFAULT '{}';
    """,
    # 4: each service's gRPC port, which endpoints carry gRPC calls to
    """
    ALTER TABLE services ADD COLUMN grpc_port INTEGER;
    """,
    # 5: autoscaling: the replicas a service wants and has ready, its target, and replicas 1 and up
    """
    ALTER TABLE services ADD COLUMN replicas INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE services ADD COLUMN ready_replicas INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE services ADD COLUMN target_concurrency REAL NOT NULL DEFAULT 1.0;
    CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        service_id TEXT NOT NULL REFERENCES services (id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        state TEXT NOT NULL,
        port INTEGER,
        grpc_port INTEGER,
        pid INTEGER,
        reason TEXT NOT NULL,
        restarts INTEGER NOT NULL,
        UNIQUE (service_id, number)
    );
    """,
    # 6: the ABEJA DataLake's channels and the content type and metadata of files uploaded to them
    # (`inferd.platform.abeja.channel_index`); the files themselves are in the DataLake folder
    """
    CREATE TABLE abeja_channels (
        channel_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        archived INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE abeja_files (
        channel_id TEXT NOT NULL,
        file_id TEXT NOT NULL,
        content_type TEXT NOT NULL,
        metadata TEXT NOT NULL,
        uploaded_at TEXT NOT NULL,
        PRIMARY KEY (channel_id, file_id)
    );
    """,
)

#: A service in these states runs nothing, so it may be deleted (and its deployment with it).
IDLE_SERVICE_STATES = frozenset({ServiceState.STOPPED, ServiceState.FAILED})
#: A run in these states is over: its state no longer changes.
FINAL_RUN_STATES = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})
ENGINES = ("local", "ray")
DIGEST_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")
_LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VERSION_ID = re.compile(r"ver-[0-9a-f]{12}")


class _Keep(Enum):
    KEEP = "keep"


#: An argument left as it is (where ``None`` is a value: `Store.update_endpoint`'s shadow).
KEEP = _Keep.KEEP


class SchemaTooNew(RuntimeError):
    """The file was written by a newer inferd, whose schema this one does not know."""


R = TypeVar("R")
_Changes = Mapping[str, Any]


# -- values in and out of columns ------------------------------------------------------------------


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


# -- checks of values --------------------------------------------------------------------------------


def _name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(f"{kind} name {name!r} cannot be used in a URL path: use {RULE}")
    return name


def _text(what: str, value: Any, empty: bool = True) -> str:
    if not isinstance(value, str) or "\x00" in value or (not empty and not value):
        raise InvalidInput(f"{what} must be {'a' if empty else 'a non-empty'} string, not {value!r}")
    return value


def _integer(what: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise InvalidInput(f"{what} must be an integer {bounds}, not {value!r}")
    return value


def _optional_integer(what: str, value: Any, low: int, high: int | None = None) -> int | None:
    return None if value is None else _integer(what, value, low, high)


def _environment(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"environment must be a mapping of names to strings, not {value!r}")
    for key, item in value.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise InvalidInput(f"environment variable name {key!r} must be letters, digits and '_'")
        if not isinstance(item, str) or "\x00" in item:
            raise InvalidInput(f"environment variable {key} must be a string, not {item!r}")
    return dict(value)


def _enum(what: str, enum: type[Any], value: Any) -> Any:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(member.value for member in enum)
        raise InvalidInput(f"{what} must be one of {choices}, not {value!r}") from None


def _json_object(what: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{what} must be a mapping, not {type(value).__name__}")
    try:
        loaded: dict[str, Any] = json.loads(json.dumps(dict(value)))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be JSON: {exc}") from None
    return loaded


def _replicas(low: int, high: int, engine: str = "local", wanted: int | None = None) -> None:
    """``min_replicas`` <= ``max_replicas`` (>= 1); a local service keeps one replica at least (its
    first serves the endpoints while others start: no scaling to zero); ``wanted`` within both."""
    _integer("min_replicas", low, 0 if engine == "ray" else 1)
    _integer("max_replicas", high, 1)
    if low > high:
        raise InvalidInput(f"min_replicas ({low}) must not exceed max_replicas ({high})")
    if wanted is not None and not max(low, 1) <= wanted <= high:
        raise InvalidInput(
            f"replicas ({wanted}) must be within min_replicas ({low}) and max_replicas ({high})"
        )


def _target(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 10_000:
        raise InvalidInput(f"target_concurrency must be a number above 0 (at most 10000), not {value!r}")
    return float(value)


#: What `Store.update_service` may change, and how each value is checked.
_SERVICE_CHANGES: dict[str, Callable[[Any], Any]] = {
    "state": lambda value: _enum("state", ServiceState, value),
    "port": lambda value: _optional_integer("port", value, 1, 65535),
    "grpc_port": lambda value: _optional_integer("grpc_port", value, 1, 65535),
    "pid": lambda value: _optional_integer("pid", value, 1),
    "reason": lambda value: _text("reason", value),
    "restarts": lambda value: _integer("restarts", value, 0),
    "workers": lambda value: _integer("workers", value, 1),
    "environment": _environment,
    "min_replicas": lambda value: _integer("min_replicas", value, 0),
    "max_replicas": lambda value: _integer("max_replicas", value, 1),
    "replicas": lambda value: _integer("replicas", value, 1),
    "ready_replicas": lambda value: _integer("ready_replicas", value, 0),
    "target_concurrency": _target,
}
_REPLICA_CHANGES: dict[str, Callable[[Any], Any]] = {
    key: _SERVICE_CHANGES[key] for key in ("state", "port", "grpc_port", "pid", "reason", "restarts")
}
_RUN_CHANGES: dict[str, Callable[[Any], Any]] = {
    "state": lambda value: _enum("state", RunState, value),
    "reason": lambda value: _text("reason", value),
    "finished_at": lambda value: value if value is None or isinstance(value, datetime) else _bad_time(value),
}
_TRIGGER_CHANGES: dict[str, Callable[[Any], Any]] = {
    "enabled": lambda value: value if isinstance(value, bool) else _bad("enabled", "true or false", value),
    "input": lambda value: _text("input", value, empty=False),
    "output": lambda value: _text("output", value, empty=False),
    "version_id": lambda value: _text("version_id", value, empty=False),
}


def _bad(what: str, expected: str, value: Any) -> Any:
    raise InvalidInput(f"{what} must be {expected}, not {value!r}")


def _bad_time(value: Any) -> Any:
    return _bad("finished_at", "a datetime", value)


def _checked_changes(
    kind: str, allowed: Mapping[str, Callable[[Any], Any]], changes: _Changes
) -> dict[str, Any]:
    unknown = sorted(set(changes) - set(allowed))
    if unknown:
        raise InvalidInput(f"a {kind}'s {', '.join(unknown)} cannot be changed; only {', '.join(allowed)}")
    return {key: allowed[key](value) for key, value in changes.items()}


# -- the store ---------------------------------------------------------------------------------------


class Store:
    """The platform's records in SQLite at ``path`` (the file and its folder are created).

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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # deployments

    def create_deployment(self, name: str, description: str = "") -> Deployment:
        record = Deployment(
            new_id("deployment"), _name("deployment", name), _text("description", description)
        )
        with self._write() as db:
            if db.execute("SELECT 1 FROM deployments WHERE name = ?", (name,)).fetchone():
                raise Conflict(f"a deployment named {name!r} exists already")
            _insert(db, DEPLOYMENTS, record)
        return record

    def deployment(self, id_or_name: str) -> Deployment:
        with self._read() as db:
            return self._deployment(db, id_or_name)

    def deployments(self) -> list[Deployment]:
        with self._read() as db:
            return _select(db, DEPLOYMENTS)

    def delete_deployment(self, id: str) -> None:
        """Delete a deployment with its versions, stopped services, finished runs and triggers.

        `Conflict` while it has endpoints, services that are not stopped or failed, or unfinished
        runs. The store keeps no bundles: `Platform.delete_deployment` discards those nothing names.
        """
        with self._write() as db:
            deployment = self._deployment(db, id)
            busy = [
                f"{count} {what}"
                for what, count in (
                    ("endpoint(s)", _count(db, "endpoints", "deployment_id = ?", deployment.id)),
                    ("active service(s)", _count_active_services(db, "deployment_id", deployment.id)),
                    ("unfinished run(s)", _count_unfinished_runs(db, "deployment_id", deployment.id)),
                )
                if count
            ]
            if busy:
                raise Conflict(f"deployment {deployment.name!r} still has {', '.join(busy)}")
            db.execute(
                "DELETE FROM replicas WHERE service_id IN (SELECT id FROM services WHERE deployment_id = ?)",
                (deployment.id,),
            )
            for table in ("runs", "triggers", "services", "versions", "deployments"):
                column = "id" if table == "deployments" else "deployment_id"
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (deployment.id,))

    # versions

    def add_version(
        self,
        deployment_id: str,
        label: str,
        digest: str,
        size: int,
        target: str = ".",
        dialect: str = "auto",
        environment: Mapping[str, str] | None = None,
        id: str | None = None,
    ) -> Version:
        """A new version; ``id`` is one `new_id` made earlier (the ABEJA API answers a version's id
        before its archive arrives), else a new one."""
        if id is not None and not _VERSION_ID.fullmatch(id):
            raise InvalidInput(f"version id {id!r} must be 'ver-' and 12 lowercase hex digits")
        if not isinstance(label, str) or not _LABEL_PATTERN.fullmatch(label):
            raise InvalidInput(
                f"version label {label!r} must be letters, digits, '_', '.', '+' and '-', "
                "starting with a letter or digit, at most 128 characters"
            )
        if not isinstance(digest, str) or not DIGEST_PATTERN.fullmatch(digest):
            raise InvalidInput(f"digest {digest!r} must be 'sha256:' and 64 lowercase hex digits")
        if not isinstance(dialect, str) or not NAME_PATTERN.fullmatch(dialect):
            raise InvalidInput(f"dialect {dialect!r} is not a dialect name")
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            record = Version(
                new_id("version") if id is None else id,
                deployment.id,
                label,
                digest,
                _integer("size", size, 0),
                _text("target", target, empty=False),
                dialect,
                _environment(environment or {}),
            )
            if db.execute(
                "SELECT 1 FROM versions WHERE deployment_id = ? AND label = ?", (deployment.id, label)
            ).fetchone():
                raise Conflict(f"deployment {deployment.name!r} has a version {label!r} already")
            if db.execute("SELECT 1 FROM versions WHERE id = ?", (record.id,)).fetchone():
                raise Conflict(f"version {record.id} exists already")
            _insert(db, VERSIONS, record)
        return record

    def version(self, id: str) -> Version:
        with self._read() as db:
            return _get(db, VERSIONS, id)

    def versions(self, deployment_id: str) -> list[Version]:
        with self._read() as db:
            deployment = self._deployment(db, deployment_id)
            return _select(db, VERSIONS, "deployment_id = ?", deployment.id)

    def names_bundle(self, digest: str) -> bool:
        """Whether any version (of any deployment) is of the bundle ``digest``."""
        with self._read() as db:
            found = db.execute("SELECT 1 FROM versions WHERE digest = ? LIMIT 1", (digest,)).fetchone()
        return found is not None

    def delete_version(self, id: str) -> None:
        """Delete a version and its finished runs; `Conflict` while a service or trigger names it, or
        a run of it is unfinished. (`Platform.delete_version` discards its bundle if nothing names it.)"""
        with self._write() as db:
            version = _get(db, VERSIONS, id)
            busy = [
                f"{count} {what}"
                for what, count in (
                    ("service(s)", _count(db, "services", "version_id = ?", id)),
                    ("trigger(s)", _count(db, "triggers", "version_id = ?", id)),
                    ("unfinished run(s)", _count_unfinished_runs(db, "version_id", id)),
                )
                if count
            ]
            if busy:
                raise Conflict(f"version {version.label!r} ({id}) is used by {', '.join(busy)}")
            db.execute("DELETE FROM runs WHERE version_id = ?", (id,))
            db.execute("DELETE FROM versions WHERE id = ?", (id,))

    # services

    def add_service(
        self,
        deployment_id: str,
        version_id: str,
        engine: str = "local",
        workers: int = 1,
        environment: Mapping[str, str] | None = None,
        min_replicas: int = 1,
        max_replicas: int = 1,
        target_concurrency: float = 1.0,
        replicas: int | None = None,
    ) -> Service:
        """A new service record, ``stopped``: whatever starts it moves it on. ``replicas``: how many
        it starts with (``min_replicas``, at least 1, when None)."""
        if engine not in ENGINES:
            raise InvalidInput(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        _integer("workers", workers, 1)
        replicas = max(1, min_replicas) if replicas is None else replicas
        _replicas(min_replicas, max_replicas, engine, replicas)
        target_concurrency = _target(target_concurrency)
        environment = _environment(environment or {})
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            version = self._version_of(db, deployment, version_id)
            record = Service(
                new_id("service"),
                deployment.id,
                version.id,
                ServiceState.STOPPED,
                engine,
                workers,
                environment,
                min_replicas,
                max_replicas,
                replicas=replicas,
                target_concurrency=target_concurrency,
            )
            _insert(db, SERVICES, record)
        return record

    def service(self, id: str) -> Service:
        with self._read() as db:
            return _get(db, SERVICES, id)

    def services(self, deployment_id: str | None = None) -> list[Service]:
        with self._read() as db:
            return self._listed(db, SERVICES, deployment_id)

    def update_service(self, id: str, **changes: Any) -> Service:
        """Change a service's state, ports, pid, reason, restarts, workers, environment or replicas."""
        checked = _checked_changes("service", _SERVICE_CHANGES, changes)
        with self._write() as db:
            current = _get(db, SERVICES, id)
            updated = replace(current, **checked, updated_at=now())
            if checked.keys() & {"min_replicas", "max_replicas", "replicas"}:
                _replicas(updated.min_replicas, updated.max_replicas, updated.engine, updated.replicas)
            _update(db, SERVICES, updated, {*checked, "updated_at"})
        return updated

    # replicas (1 and up; a service's first is the service's own record)

    def add_replica(self, service_id: str, number: int) -> Replica:
        """Replica ``number`` (>= 1) of a service, ``starting``: recorded before its process starts,
        so a control process that dies meanwhile leaves a record to adopt or start again."""
        _integer("replica number", number, 1)
        with self._write() as db:
            service = _get(db, SERVICES, service_id)
            record = Replica(replica_id(service.id, number), service.id, number, ServiceState.STARTING)
            if db.execute("SELECT 1 FROM replicas WHERE id = ?", (record.id,)).fetchone():
                raise Conflict(f"service {service.id} has a replica {number} already")
            _insert(db, REPLICAS, record)
        return record

    def replicas(self, service_id: str | None = None) -> list[Replica]:
        """The replicas (1 and up) of a service, by number; of every service with None."""
        with self._read() as db:
            if service_id is None:
                return _select(db, REPLICAS)
            return sorted(_select(db, REPLICAS, "service_id = ?", service_id), key=lambda r: r.number)

    def update_replica(self, id: str, **changes: Any) -> Replica:
        checked = _checked_changes("replica", _REPLICA_CHANGES, changes)
        with self._write() as db:
            updated = replace(_get(db, REPLICAS, id), **checked)
            _update(db, REPLICAS, updated, set(checked))
        return updated

    def delete_replica(self, id: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM replicas WHERE id = ?", (id,))

    def delete_service(self, id: str) -> None:
        """`Conflict` unless it is stopped or failed and no endpoint routes or mirrors to it."""
        with self._write() as db:
            service = _get(db, SERVICES, id)
            if service.state not in IDLE_SERVICE_STATES:
                raise Conflict(f"service {id} is {service.state.value}: stop it before deleting it")
            endpoints = _endpoints_using(db, id)
            if endpoints:
                raise Conflict(f"service {id} is used by endpoint(s) {', '.join(map(repr, endpoints))}")
            db.execute("DELETE FROM replicas WHERE service_id = ?", (id,))
            db.execute("DELETE FROM services WHERE id = ?", (id,))

    # endpoints

    def add_endpoint(
        self,
        deployment_id: str,
        name: str,
        routes: Sequence[Route],
        shadow_service_id: str | None = None,
        shadow_percent: int = 0,
    ) -> Endpoint:
        _name("endpoint", name)
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            record = Endpoint(
                new_id("endpoint"), deployment.id, name, tuple(routes), shadow_service_id, shadow_percent
            )
            _check_endpoint(db, record)
            if db.execute(
                "SELECT 1 FROM endpoints WHERE deployment_id = ? AND name = ?", (deployment.id, name)
            ).fetchone():
                raise Conflict(f"deployment {deployment.name!r} has an endpoint {name!r} already")
            _insert(db, ENDPOINTS, record)
            _insert_routes(db, record)
        return record

    def endpoint(self, id: str) -> Endpoint:
        with self._read() as db:
            return _endpoint(db, id)

    def endpoints(self, deployment_id: str | None = None) -> list[Endpoint]:
        with self._read() as db:
            if deployment_id is None:
                ids = db.execute("SELECT id FROM endpoints ORDER BY rowid").fetchall()
            else:
                deployment = self._deployment(db, deployment_id)
                ids = db.execute(
                    "SELECT id FROM endpoints WHERE deployment_id = ? ORDER BY rowid", (deployment.id,)
                ).fetchall()
            return [_endpoint(db, id) for (id,) in ids]

    def update_endpoint(
        self,
        id: str,
        routes: Sequence[Route] | None = None,
        shadow_service_id: str | _Keep | None = KEEP,
        shadow_percent: int | None = None,
    ) -> Endpoint:
        """Replace the routes and/or the shadow (``None`` removes it, and its share unless given);
        arguments left out keep their value. The same checks as `add_endpoint`."""
        with self._write() as db:
            current = _endpoint(db, id)
            updated = current
            if routes is not None:
                updated = replace(updated, routes=tuple(routes))
            if not isinstance(shadow_service_id, _Keep):
                updated = replace(updated, shadow_service_id=shadow_service_id)
                if shadow_service_id is None and shadow_percent is None:
                    updated = replace(updated, shadow_percent=0)
            if shadow_percent is not None:
                updated = replace(updated, shadow_percent=shadow_percent)
            _check_endpoint(db, updated)
            _update(db, ENDPOINTS, updated, {"shadow_service_id", "shadow_percent"})
            db.execute("DELETE FROM endpoint_routes WHERE endpoint_id = ?", (id,))
            _insert_routes(db, updated)
        return updated

    def delete_endpoint(self, id: str) -> None:
        with self._write() as db:
            _get(db, ENDPOINTS, id, routes=())
            db.execute("DELETE FROM endpoints WHERE id = ?", (id,))

    # runs

    def add_run(
        self,
        deployment_id: str,
        version_id: str,
        inputs: Sequence[str],
        output: str,
        parameters: Mapping[str, Any] | None = None,
        trigger_id: str | None = None,
    ) -> Run:
        """A new ``pending`` run of a version of the deployment over ``inputs`` (files or URIs)."""
        if isinstance(inputs, str) or not inputs:
            raise InvalidInput("a run needs a list of one or more inputs")
        checked_inputs = tuple(_text("an input", item, empty=False) for item in inputs)
        _text("output", output, empty=False)
        checked_parameters = _json_object("parameters", parameters or {})
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            version = self._version_of(db, deployment, version_id)
            if trigger_id is not None:
                trigger = _get(db, TRIGGERS, trigger_id)
                if trigger.deployment_id != deployment.id:
                    raise InvalidInput(f"trigger {trigger_id} belongs to another deployment")
            record = Run(
                new_id("run"),
                deployment.id,
                version.id,
                RunState.PENDING,
                checked_inputs,
                output,
                checked_parameters,
                trigger_id=trigger_id,
            )
            _insert(db, RUNS, record)
        return record

    def run(self, id: str) -> Run:
        with self._read() as db:
            return _get(db, RUNS, id)

    def runs(self, deployment_id: str | None = None, trigger_id: str | None = None) -> list[Run]:
        with self._read() as db:
            return self._listed(db, RUNS, deployment_id, trigger_id=trigger_id)

    def update_run(self, id: str, **changes: Any) -> Run:
        """Change a run's state, reason or finished_at. A finished run's state is final (`Conflict`);
        entering a final state sets ``finished_at`` unless it is given."""
        checked = _checked_changes("run", _RUN_CHANGES, changes)
        with self._write() as db:
            current = _get(db, RUNS, id)
            if "state" in checked and current.state in FINAL_RUN_STATES and checked["state"] != current.state:
                raise Conflict(f"run {id} is {current.state.value} already")
            if checked.get("state") in FINAL_RUN_STATES and current.finished_at is None:
                checked.setdefault("finished_at", now())
            updated = replace(current, **checked)
            _update(db, RUNS, updated, set(checked))
        return updated

    # triggers

    def add_trigger(
        self,
        deployment_id: str,
        version_id: str,
        input: str,
        output: str,
        enabled: bool = True,
        parameters: Mapping[str, Any] | None = None,
    ) -> Trigger:
        """A trigger; ``parameters`` are given to each run it starts."""
        _text("input", input, empty=False)
        _text("output", output, empty=False)
        _TRIGGER_CHANGES["enabled"](enabled)
        checked_parameters = _json_object("parameters", parameters or {})
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            version = self._version_of(db, deployment, version_id)
            record = Trigger(
                new_id("trigger"),
                deployment.id,
                version.id,
                input,
                output,
                enabled,
                parameters=checked_parameters,
            )
            _insert(db, TRIGGERS, record)
        return record

    def trigger(self, id: str) -> Trigger:
        with self._read() as db:
            return _get(db, TRIGGERS, id)

    def triggers(self, deployment_id: str | None = None, enabled: bool | None = None) -> list[Trigger]:
        with self._read() as db:
            return self._listed(
                db, TRIGGERS, deployment_id, enabled=None if enabled is None else int(enabled)
            )

    def update_trigger(self, id: str, **changes: Any) -> Trigger:
        """Change a trigger's enabled flag, input, output or version (one of its deployment)."""
        checked = _checked_changes("trigger", _TRIGGER_CHANGES, changes)
        with self._write() as db:
            current = _get(db, TRIGGERS, id)
            if "version_id" in checked:
                self._version_of(db, self._deployment(db, current.deployment_id), checked["version_id"])
            updated = replace(current, **checked)
            _update(db, TRIGGERS, updated, set(checked))
        return updated

    def delete_trigger(self, id: str) -> None:
        """Delete a trigger and what it has seen; the runs it started stay, without a trigger."""
        with self._write() as db:
            _get(db, TRIGGERS, id)
            db.execute("DELETE FROM triggers WHERE id = ?", (id,))

    def trigger_saw(self, trigger_id: str, key: str) -> bool:
        """Record that the trigger has seen ``key`` (a file or object name): False the first time,
        True ever after, atomically, so two watchers never both act on one file."""
        _text("key", key, empty=False)
        with self._write() as db:
            _get(db, TRIGGERS, trigger_id)
            cursor = db.execute(
                "INSERT OR IGNORE INTO trigger_seen (trigger_id, key, seen_at) VALUES (?, ?, ?)",
                (trigger_id, key, _time_text(now())),
            )
        return cursor.rowcount == 0

    def add_trigger_run(self, trigger_id: str, key: str, inputs: Sequence[str], output: str) -> Run | None:
        """What a trigger does with ``key`` (a file or object name) in one transaction: record it seen
        and add a ``pending`` run of the trigger's version over ``inputs``, with the trigger's
        parameters. None, and nothing written,
        when the trigger saw ``key`` before or is disabled: one run per file, however often asked."""
        _text("key", key, empty=False)
        checked_inputs = tuple(_text("an input", item, empty=False) for item in inputs)
        _text("output", output, empty=False)
        with self._write() as db:
            trigger = _get(db, TRIGGERS, trigger_id)
            if not trigger.enabled:
                return None
            cursor = db.execute(
                "INSERT OR IGNORE INTO trigger_seen (trigger_id, key, seen_at) VALUES (?, ?, ?)",
                (trigger_id, key, _time_text(now())),
            )
            if cursor.rowcount == 0:
                return None
            record = Run(
                new_id("run"),
                trigger.deployment_id,
                trigger.version_id,
                RunState.PENDING,
                checked_inputs,
                output,
                dict(trigger.parameters),
                trigger_id=trigger.id,
            )
            _insert(db, RUNS, record)
        return record

    # transactions and shared lookups

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


def _statements(script: str) -> list[str]:
    """The statements of a migration script, run one by one so they stay in the caller's transaction
    (``executescript`` would commit it first)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ValueError(f"a migration ends with an incomplete statement: {pending.strip()!r}")
    return statements


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


def _count_active_services(db: sqlite3.Connection, column: str, value: str) -> int:
    idle = sorted(state.value for state in IDLE_SERVICE_STATES)
    return _count(db, "services", f"{column} = ? AND state NOT IN (?, ?)", value, *idle)


def _count_unfinished_runs(db: sqlite3.Connection, column: str, value: str) -> int:
    final = sorted(state.value for state in FINAL_RUN_STATES)
    return _count(db, "runs", f"{column} = ? AND state NOT IN (?, ?, ?)", value, *final)


def _endpoint(db: sqlite3.Connection, id: str) -> Endpoint:
    routes = tuple(
        Route(service_id, weight)
        for service_id, weight in db.execute(
            "SELECT service_id, weight FROM endpoint_routes WHERE endpoint_id = ? ORDER BY position", (id,)
        )
    )
    return _get(db, ENDPOINTS, id, routes=routes)


def _insert_routes(db: sqlite3.Connection, endpoint: Endpoint) -> None:
    db.executemany(
        "INSERT INTO endpoint_routes (endpoint_id, position, service_id, weight) VALUES (?, ?, ?, ?)",
        [
            (endpoint.id, position, route.service_id, route.weight)
            for position, route in enumerate(endpoint.routes)
        ],
    )


def _endpoints_using(db: sqlite3.Connection, service_id: str) -> list[str]:
    rows = db.execute(
        "SELECT name FROM endpoints WHERE shadow_service_id = ? OR id IN "
        "(SELECT endpoint_id FROM endpoint_routes WHERE service_id = ?) ORDER BY rowid",
        (service_id, service_id),
    ).fetchall()
    return [name for (name,) in rows]


def _check_endpoint(db: sqlite3.Connection, endpoint: Endpoint) -> None:
    """Weights are integers from 0 to 100 summing to 100, over distinct services of the endpoint's
    deployment; the shadow, if any, is another service of it, mirroring 0 to 100 percent."""
    if not endpoint.routes:
        raise InvalidInput("an endpoint needs at least one route")
    seen: set[str] = set()
    for route in endpoint.routes:
        if not isinstance(route, Route):
            raise InvalidInput(f"a route must name a service and a weight, not {route!r}")
        _integer(f"the weight of service {route.service_id}", route.weight, 0, 100)
        if route.service_id in seen:
            raise InvalidInput(f"service {route.service_id} appears twice in the routes")
        seen.add(route.service_id)
        _service_of(db, endpoint.deployment_id, route.service_id)
    total = sum(route.weight for route in endpoint.routes)
    if total != 100:
        raise InvalidInput(f"route weights must sum to 100, not {total}")
    _integer("shadow_percent", endpoint.shadow_percent, 0, 100)
    if endpoint.shadow_service_id is not None:
        if endpoint.shadow_service_id in seen:
            raise InvalidInput(f"service {endpoint.shadow_service_id} cannot be both a route and the shadow")
        _service_of(db, endpoint.deployment_id, endpoint.shadow_service_id)
    elif endpoint.shadow_percent:
        raise InvalidInput("shadow_percent needs a shadow service")


def _service_of(db: sqlite3.Connection, deployment_id: str, service_id: Any) -> Service:
    if not isinstance(service_id, str):
        raise InvalidInput(f"a service id must be a string, not {service_id!r}")
    service = _get(db, SERVICES, service_id)
    if service.deployment_id != deployment_id:
        raise InvalidInput(f"service {service_id} belongs to another deployment")
    return service
