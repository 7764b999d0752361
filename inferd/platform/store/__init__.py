"""The platform's state: deployments, versions, services, endpoints, runs and triggers in one SQLite file.

Every public method is one transaction (``BEGIN IMMEDIATE`` for writes, so its checks and its writes
see the same data even when another process writes the file), and raises the typed errors of
`inferd.core.errors`: `NotFound` naming the kind and the id or name, `Conflict` for a duplicate or a
record still in use, `InvalidInput` for a bad value. Nothing is ever half-created.

`Store` is composed of one class per group of tables, each in its own module: `deployments`
(deployments and versions), `services` (services and replicas), `endpoints` (endpoints and their
routes) and `runs` (runs and triggers), over `connection` (the file, its transactions and shared
lookups), `schema` (the migrations), `rows` (records to and from columns) and `checks` (the values
callers give).
"""

from __future__ import annotations

from inferd.platform.store.deployments import DIGEST_PATTERN, Deployments
from inferd.platform.store.endpoints import KEEP, Endpoints
from inferd.platform.store.runs import FINAL_RUN_STATES, Runs
from inferd.platform.store.schema import MIGRATIONS, SchemaTooNew
from inferd.platform.store.services import ENGINES, IDLE_SERVICE_STATES, Services

__all__ = [
    "DIGEST_PATTERN",
    "ENGINES",
    "FINAL_RUN_STATES",
    "IDLE_SERVICE_STATES",
    "KEEP",
    "MIGRATIONS",
    "SchemaTooNew",
    "Store",
]


class Store(Deployments, Services, Endpoints, Runs):
    """The platform's records in SQLite at ``path``: every table's methods over one `Connection`
    (whose ``migrations``, the schema to bring the file to, only tests give)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
