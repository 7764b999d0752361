"""The services and replicas tables: `Services`, the store's methods over them, with the checks of a
service's engine, replica counts and target concurrency, and what `update_service` and
`update_replica` may change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from inferd.core.errors import Conflict, InvalidInput
from inferd.platform.records import Replica, Service, ServiceState, new_id, now, replica_id
from inferd.platform.store.checks import (
    _checked_changes,
    _enum,
    _environment,
    _integer,
    _optional_integer,
    _text,
)
from inferd.platform.store.connection import Connection
from inferd.platform.store.endpoints import _endpoints_using
from inferd.platform.store.rows import REPLICAS, SERVICES, _count, _get, _insert, _select, _update

#: A service in these states runs nothing, so it may be deleted (and its deployment with it).
IDLE_SERVICE_STATES = frozenset({ServiceState.STOPPED, ServiceState.FAILED})
ENGINES = ("local", "ray")


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


class Services(Connection):
    """The store's services and their replicas."""

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


def _count_active_services(db: sqlite3.Connection, column: str, value: str) -> int:
    idle = sorted(state.value for state in IDLE_SERVICE_STATES)
    return _count(db, "services", f"{column} = ? AND state NOT IN (?, ?)", value, *idle)
