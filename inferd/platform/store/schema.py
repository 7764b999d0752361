"""The store's schema: `MIGRATIONS`, one script per version of the file (append only), and how a
script is cut into statements that run inside the caller's transaction.

``PRAGMA user_version`` counts the applied entries of `MIGRATIONS`. A later change appends a script
(never edits one); opening an older file applies the missing ones, each in its own transaction
(`inferd.platform.store.connection.Connection._migrate`).
"""

from __future__ import annotations

import sqlite3

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


class SchemaTooNew(RuntimeError):
    """The file was written by a newer inferd, whose schema this one does not know."""


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
