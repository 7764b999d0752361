"""The control process's budget of processes: one ``POST .../services`` could otherwise ask for 64
replicas of 64 workers each, and an autoscaler or a run could add more until the machine gives out.

Every process the control process runs for its services and runs is counted against
``max_processes`` (`inferd.platform.settings.PlatformSettings`): a live local service's replicas
times the processes of each (its workers, plus the supervisor ``inferd serve`` runs above them when
there are several or the model is isolated), a Ray service's workers plus its server, and one per
running run. What would go past it is refused before anything is recorded or started
(`BudgetExceeded`, 409, naming the budget, what is in use and the setting); the autoscaler asks
`Budget.replicas_within` and stops at what fits.

Services on their way to ``starting`` (recorded, their folder being unpacked) are counted from the
moment they pass the check (`Budget.reserve`), so two requests at once cannot both take the last
room.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from inferd.core.errors import BudgetExceeded
from inferd.platform.records import Service, ServiceState

SETTING = "INFERD_MAX_PROCESSES"
_TRUE = frozenset({"1", "true", "yes", "on"})
_LIVE = (ServiceState.STARTING, ServiceState.RUNNING)


def per_replica(engine: str, workers: int, environment: Mapping[str, str]) -> int:
    """The processes one replica of a service runs: ``inferd serve`` alone, or a supervisor and its
    ``workers`` (several workers, or an isolated model: ``INFERD_ISOLATE``); a Ray service its
    server and ``workers`` Ray Serve replicas."""
    if engine == "ray":
        return workers + 1
    isolated = environment.get("INFERD_ISOLATE", "").strip().lower() in _TRUE
    return workers + 1 if workers > 1 or isolated else 1


def processes_of(service: Service, replicas: int | None = None) -> int:
    """The processes the service runs with ``replicas`` replicas (its wanted count by default); a
    Ray service runs one ``inferd serve`` whatever its replicas (Ray Serve scales inside it)."""
    count = 1 if service.engine == "ray" else (service.replicas if replicas is None else replicas)
    return max(1, count) * per_replica(service.engine, service.workers, service.environment)


class Companion(Protocol):
    """Something beside the runs that runs processes for the control process (ABEJA training jobs):
    its ``active()`` processes are counted, and it stops them on ``detach()``."""

    def active(self) -> int: ...

    def detach(self) -> None: ...


class Budget:
    """How many processes may run (``limit``), and what runs: the live services of
    ``services()`` and the ``running_runs()``."""

    def __init__(
        self,
        limit: int,
        services: Callable[[], Iterable[Service]],
        running_runs: Callable[[], int],
    ) -> None:
        self.limit = limit
        self._services = services
        self._running_runs = running_runs
        #: Services past the check and not ``starting`` yet: counted as if they were.
        self._reserved: set[str] = set()

    def in_use(self, excluding: str | None = None) -> int:
        """The processes counted now (``excluding`` a service being changed)."""
        used = self._running_runs()
        for service in self._services():
            if service.id != excluding and self._counted(service):
                used += processes_of(service)
        return used

    def _counted(self, service: Service) -> bool:
        return service.state in _LIVE or service.id in self._reserved

    def check(self, asked: int) -> None:
        """BudgetExceeded unless ``asked`` more processes fit beside those in use."""
        used = self.in_use()
        if used + asked > self.limit:
            raise BudgetExceeded("processes", asked, used, self.limit, SETTING)

    def check_service(self, service: Service, replicas: int | None = None) -> None:
        """BudgetExceeded unless the service with ``replicas`` (its wanted count by default) fits
        beside everything else: what it runs already is in use, the rest is asked."""
        now = processes_of(service) if self._counted(service) else 0
        self.check(processes_of(service, replicas) - now)

    def check_growth(self, service: Service, replicas: int) -> None:
        """BudgetExceeded when a live local service's ``replicas`` more than it has do not fit (a
        stopped one is checked when it starts)."""
        if service.engine == "local" and service.state in _LIVE and replicas > service.replicas:
            self.check_service(service, replicas)

    def replicas_within(self, service: Service, wanted: int) -> int:
        """The most replicas up to ``wanted`` the service may run beside everything else (at least
        those it has: a scale down is never refused)."""
        room = self.limit - self.in_use(excluding=service.id)
        fitting = room // per_replica(service.engine, service.workers, service.environment)
        return max(min(wanted, fitting), min(wanted, service.replicas))

    def reserve(self, service_id: str) -> None:
        self._reserved.add(service_id)

    def release(self, service_id: str) -> None:
        self._reserved.discard(service_id)
