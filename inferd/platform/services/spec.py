"""What a service runner is given (`ServiceSpec`), what it reports (`StateChange`) and when it gives
up restarting (`RestartPolicy`): plain values, so the runner needs neither the store nor the
artifact store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inferd.platform.records import ServiceState


@dataclass(frozen=True)
class ServiceSpec:
    """One service to run: ``inferd serve TARGET`` in ``folder`` (an unpacked version), with
    ``engine`` ``local`` (``workers`` processes) or ``ray`` (``--engine ray``: ``workers`` Ray Serve
    replicas, on a local Ray of its own or the cluster at ``INFERD_RAY_ADDRESS`` in its environment).

    ``port`` and ``grpc_port`` are the loopback HTTP and gRPC ports to listen on; None picks a free
    one at the first start, which every restart then keeps. ``environment`` is added to the
    runner's own. The output goes to ``log_dir/<service_id>.log``. ``engine``: ``local`` (worker
    processes) or ``ray`` (Ray Serve replicas). Each replica of a local service is a spec of its
    own (`inferd.platform.records.replica_id`).
    """

    service_id: str
    folder: Path
    log_dir: Path
    target: str = "."
    dialect: str = "auto"
    workers: int = 1
    environment: dict[str, str] = field(default_factory=dict)
    port: int | None = None
    engine: str = "local"
    grpc_port: int | None = None
    #: Ray only: (min, max) replicas for Ray Serve's autoscaler (``--autoscale``) aiming at
    #: ``target_concurrency`` ongoing requests per replica; None runs ``workers`` replicas.
    autoscale: tuple[int, int] | None = None
    target_concurrency: float = 1.0
    #: The name of the service's deployment: with its id, it names the service's Ray Serve
    #: application (`ray_application`).
    deployment: str = ""

    @property
    def ray_application(self) -> str:
        """Its Ray Serve application's name, ``inferd-<deployment>-<service>``: of its own on a
        cluster several services share, where it is also its route prefix (``/`` + the name)."""
        return "-".join(part for part in ("inferd", self.deployment, self.service_id) if part)


@dataclass(frozen=True)
class StateChange:
    """A service's state as it changed: where it listens (HTTP, and gRPC unless its server has it
    off), its leading process, why (for ``failed``, the last lines of its log) and how many times it
    was started again."""

    state: ServiceState
    port: int | None = None
    pid: int | None = None
    reason: str = ""
    restarts: int = 0
    grpc_port: int | None = None


@dataclass(frozen=True)
class RestartPolicy:
    """When to start a service again and when to give up.

    A server that exits while running is started again after ``first_delay`` seconds, doubled with
    each crash within ``window`` seconds up to ``max_delay``; the ``max_crashes``-th crash within the
    window makes the service ``failed``. A server that exits before its ready line (code that fails to
    load) is tried ``start_attempts`` times in a row, with the same delays. One that cannot listen on
    its port is not tried again.
    """

    first_delay: float = 1.0
    max_delay: float = 30.0
    max_crashes: int = 5
    window: float = 60.0
    start_attempts: int = 5
    #: Seconds a server may take from its start to its ready line (loading large models).
    start_timeout: float = 300.0

    def delay(self, failures: int) -> float:
        """The pause before the next start after ``failures`` failures in a row (1, 2, 4 ... s)."""
        return float(min(self.max_delay, self.first_delay * 2 ** max(0, failures - 1)))
