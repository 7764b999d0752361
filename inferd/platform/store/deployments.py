"""The deployments and versions tables: `Deployments`, the store's methods over them. Deleting a
deployment or a version asks the services and runs tables whether anything still uses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from inferd.core.errors import Conflict, InvalidInput
from inferd.core.names import NAME_PATTERN
from inferd.platform.records import Deployment, Version, new_id
from inferd.platform.store.checks import _environment, _integer, _name, _text
from inferd.platform.store.connection import Connection
from inferd.platform.store.rows import DEPLOYMENTS, VERSIONS, _count, _get, _insert, _select
from inferd.platform.store.runs import _count_unfinished_runs
from inferd.platform.store.services import _count_active_services

DIGEST_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")
_LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
_VERSION_ID = re.compile(r"ver-[0-9a-f]{12}")


class Deployments(Connection):
    """The store's deployments and their versions."""

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
