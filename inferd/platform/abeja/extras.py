"""What ABEJA's API says of a record that inferd's records do not hold: a deployment's default
environment, a version's image, handler and user parameters, a service's instance type and number.

Kept in side tables of the platform's SQLite file (migration 2 of `inferd.platform.store`), one row per
record, removed with the record (``ON DELETE CASCADE``). A record made through the control API has no
row and reads as ABEJA's defaults. Each call is one short transaction on a connection of its own.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_IMAGE = "abeja-inc/all-cpu:19.10"
DEFAULT_HANDLER = "main:handler"
DEFAULT_INSTANCE_TYPE = "cpu-0.25"


@dataclass(frozen=True)
class VersionExtras:
    image: str = DEFAULT_IMAGE
    handler: str = DEFAULT_HANDLER
    user_parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceExtras:
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_number: int = 1
    enable_autoscale: bool = False
    user_env_vars: dict[str, str] = field(default_factory=dict)


class Extras:
    """The side tables in the SQLite file at ``path`` (the store has created and migrated it)."""

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA foreign_keys = ON")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def set_default_environment(self, deployment_id: str, environment: Mapping[str, str]) -> None:
        self._put("abeja_deployments", deployment_id, json.dumps(dict(environment), sort_keys=True))

    def default_environment(self, deployment_id: str) -> dict[str, str]:
        row = self._get("SELECT default_environment FROM abeja_deployments", "deployment_id", deployment_id)
        return {} if row is None else dict(json.loads(row[0]))

    def set_version(self, version_id: str, extras: VersionExtras) -> None:
        self._put(
            "abeja_versions",
            version_id,
            extras.image,
            extras.handler,
            json.dumps(extras.user_parameters, sort_keys=True),
        )

    def version(self, version_id: str) -> VersionExtras | None:
        row = self._get(
            "SELECT image, handler, user_parameters FROM abeja_versions", "version_id", version_id
        )
        return None if row is None else VersionExtras(row[0], row[1], dict(json.loads(row[2])))

    def set_service(self, service_id: str, extras: ServiceExtras) -> None:
        self._put(
            "abeja_services",
            service_id,
            extras.instance_type,
            extras.instance_number,
            int(extras.enable_autoscale),
            json.dumps(extras.user_env_vars, sort_keys=True),
        )

    def service(self, service_id: str) -> ServiceExtras | None:
        row = self._get(
            "SELECT instance_type, instance_number, enable_autoscale, user_env_vars FROM abeja_services",
            "service_id",
            service_id,
        )
        return None if row is None else ServiceExtras(row[0], row[1], bool(row[2]), dict(json.loads(row[3])))

    def _put(self, table: str, *values: object) -> None:
        marks = ", ".join("?" * len(values))
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", values)

    def _get(self, select: str, key: str, value: str) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(f"{select} WHERE {key} = ?", (value,)).fetchone()
        return row
