"""What the platform keeps: one frozen dataclass per kind of record, as the store returns them.

Identifiers are short random strings with a kind prefix (``dep-``, ``ver-``, ``svc-``, ``end-``,
``run-``, ``trg-``), so a mistyped one is never taken for another kind. Times are UTC.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, TypeVar

from inferd.core.errors import InferdError, NotFound

PREFIXES = {
    "deployment": "dep",
    "version": "ver",
    "service": "svc",
    "endpoint": "end",
    "run": "run",
    "trigger": "trg",
}
#: Where a replica's number follows its service's id in the replica's id (``svc-0123456789ab.r2``).
REPLICA_MARK = ".r"


def new_id(kind: str) -> str:
    return f"{PREFIXES[kind]}-{secrets.token_hex(6)}"


def now() -> datetime:
    return datetime.now(timezone.utc)


class ServiceState(str, Enum):
    """A service's life: ``starting`` until its server answers, ``running``; ``stopping`` then
    ``stopped`` on request; ``failed`` when it crashed too often in a row (its ``reason`` says why)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class RunState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Deployment:
    """A named application: an ABEJA deployment, a Cortex API, a Seldon deployment."""

    id: str
    name: str
    description: str = ""
    created_at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class Version:
    """An immutable bundle of a project folder, named by the digest of its content."""

    id: str
    deployment_id: str
    #: The label users give it (ABEJA's "0.0.1"); unique within its deployment.
    label: str
    #: ``sha256:<hex>`` of the bundle: two uploads of the same folder are one bundle.
    digest: str
    size: int
    #: What ``inferd serve`` is given inside the unpacked bundle, and the dialect (``auto`` to detect).
    target: str = "."
    dialect: str = "auto"
    #: Environment variables and user parameters the version's services start with.
    environment: dict[str, str] = field(default_factory=dict)
    created_at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class Service:
    """A running instance of one version, as ``replicas`` separate servers (each ``workers``
    processes) behind the endpoints routing to it; the autoscaler moves ``replicas`` between
    ``min_replicas`` and ``max_replicas`` from the requests each replica holds at the data path,
    aiming at ``target_concurrency`` in flight per replica.

    The service's own fields (``port``, ``pid``, ``state``...) are those of its first replica, number
    0, which lives as long as the service; replicas 1 and up are `Replica` records."""

    id: str
    deployment_id: str
    version_id: str
    state: ServiceState
    engine: str = "local"
    workers: int = 1
    environment: dict[str, str] = field(default_factory=dict)
    min_replicas: int = 1
    max_replicas: int = 1
    #: Where its server listens (loopback), once started; its process id on this machine.
    port: int | None = None
    pid: int | None = None
    reason: str = ""
    restarts: int = 0
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    #: Its server's gRPC port (loopback), once started; None while unknown or when it has gRPC off.
    grpc_port: int | None = None
    #: Replicas wanted now (the autoscaler's choice, within min and max), and those ready (serving).
    replicas: int = 1
    ready_replicas: int = 0
    #: Requests in flight per replica the autoscaler aims for (Cortex's target_replica_concurrency).
    target_concurrency: float = 1.0


@dataclass(frozen=True)
class Scaling:
    """How a service scales: between ``min_replicas`` and ``max_replicas`` replicas, aiming at
    ``target_concurrency`` requests in flight per replica; ``initial`` replicas at its start (None:
    ``min_replicas``). The defaults are one replica that never scales."""

    min_replicas: int = 1
    max_replicas: int = 1
    target_concurrency: float = 1.0
    initial: int | None = None


@dataclass(frozen=True)
class Replica:
    """One server of a service beyond its first: ``inferd serve`` on a loopback port of its own,
    supervised like the service's first one; its id is the service's with its ``number``
    (`replica_id`)."""

    id: str
    service_id: str
    number: int
    state: ServiceState
    port: int | None = None
    grpc_port: int | None = None
    pid: int | None = None
    reason: str = ""
    restarts: int = 0


def replica_id(service_id: str, number: int) -> str:
    """The id of replica ``number`` of a service: the service's own id for replica 0."""
    return service_id if number == 0 else f"{service_id}{REPLICA_MARK}{number}"


def replica_of(id: str) -> tuple[str, int]:
    """(service id, replica number) of a replica's id (`replica_id` undone)."""
    service_id, mark, number = id.rpartition(REPLICA_MARK)
    return (service_id, int(number)) if mark and number.isdigit() else (id, 0)


@dataclass(frozen=True)
class Route:
    service_id: str
    weight: int


@dataclass(frozen=True)
class Endpoint:
    """A stable address routing to services by weight (summing to 100), optionally mirroring a share of
    requests to a shadow service whose answers are dropped."""

    id: str
    deployment_id: str
    name: str
    routes: tuple[Route, ...]
    shadow_service_id: str | None = None
    shadow_percent: int = 0
    created_at: datetime = field(default_factory=now)

    @property
    def etag(self) -> str:
        """An HTTP entity tag of what the endpoint routes to (its routes and shadow, not its name or
        times): a client that read it switches it on condition that nobody switched it since
        (``If-Match``), as two ``inferd deploy`` of one deployment at once must."""
        routing = ",".join(f"{route.service_id}={route.weight}" for route in self.routes)
        routing += f";{self.shadow_service_id}={self.shadow_percent}"
        return '"' + hashlib.sha256(routing.encode()).hexdigest()[:20] + '"'


@dataclass(frozen=True)
class Run:
    """A batch execution of a version over input files or URIs into an output location."""

    id: str
    deployment_id: str
    version_id: str
    state: RunState
    inputs: tuple[str, ...]
    output: str
    parameters: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    trigger_id: str | None = None
    created_at: datetime = field(default_factory=now)
    finished_at: datetime | None = None


@dataclass(frozen=True)
class Trigger:
    """Runs a version for each new file appearing under an input folder or storage prefix."""

    id: str
    deployment_id: str
    version_id: str
    input: str
    output: str
    enabled: bool = True
    created_at: datetime = field(default_factory=now)
    #: Environment variables of each run it starts (as a run's ``parameters``).
    parameters: dict[str, Any] = field(default_factory=dict)


#: The records that belong to one deployment.
Owned = TypeVar("Owned", Version, Service, Endpoint, Run, Trigger)


def of_deployment(record: Owned, deployment: Deployment, error: type[InferdError] = NotFound) -> Owned:
    """``record`` when it belongs to ``deployment``; else ``error`` (NotFound for a record a path named,
    InvalidInput for one a body named) naming both."""
    if record.deployment_id != deployment.id:
        kind = type(record).__name__.lower()
        raise error(f"{kind} {record.id!r} is not a {kind} of deployment {deployment.name!r}")
    return record
