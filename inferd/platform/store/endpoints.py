"""The endpoints and endpoint_routes tables: `Endpoints`, the store's methods over them, and the
checks of an endpoint's routes and shadow against its deployment's services.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from inferd.core.errors import Conflict, InvalidInput
from inferd.platform.records import Endpoint, Route, Service, new_id
from inferd.platform.store.checks import _integer, _name
from inferd.platform.store.connection import Connection
from inferd.platform.store.rows import ENDPOINTS, SERVICES, _get, _insert, _update


class _Keep(Enum):
    KEEP = "keep"


#: An argument left as it is (where ``None`` is a value: `Store.update_endpoint`'s shadow).
KEEP = _Keep.KEEP


class Endpoints(Connection):
    """The store's endpoints, each with its weighted routes and optional shadow."""

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
