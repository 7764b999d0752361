"""The autoscaler of the control process: every ``interval`` it samples the requests in flight at the
data path (the embedded gateway's counts, or HAProxy's sessions), adds up each service's over its
replicas, and has the platform scale a service whose `Recommender` asks for another count. A scale
runs as a task of its own (a scale down waits for a drain), one at a time per service; the loop goes
on meanwhile.

Only local services that may scale (``min_replicas < max_replicas``) and run are watched; a Ray
service is scaled by Ray Serve itself. A scale up stops at the control process's process budget
(`inferd.platform.budget`): the service runs the replicas that fit, and the log says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from inferd.core.errors import InferdError
from inferd.platform.manager import Platform
from inferd.platform.records import Service, ServiceState
from inferd.platform.scaling.policy import Bounds, Recommender, ScalePolicy

logger = logging.getLogger("inferd.platform.scaling")


def scalable(service: Service) -> bool:
    return (
        service.engine == "local"
        and service.state is ServiceState.RUNNING
        and service.min_replicas < service.max_replicas
    )


class Autoscaler:
    def __init__(
        self,
        platform: Platform,
        policy: ScalePolicy,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.platform, self.policy, self.interval, self.clock = platform, policy, interval, clock
        self.recommenders: dict[str, Recommender] = {}
        self.scaling: dict[str, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None
        #: Services held below what their load asks by the process budget (logged once each time).
        self.held: set[str] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="inferd autoscaler")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except Exception:  # a failed sample must not end autoscaling
                logger.exception("autoscaling failed this time; trying again")

    async def tick(self) -> None:
        """One sample of every scalable service, and the scales it asks for."""
        counts = await self.platform.path.inflight()
        now = self.clock()
        watched = set()
        for service in self.platform.store.services():
            if not scalable(service):
                continue
            watched.add(service.id)
            load = sum(counts.get(address, 0) for address in self.platform.routing.addresses(service))
            recommender = self.recommenders.setdefault(service.id, Recommender(self.policy, now))
            bounds = Bounds(
                service.replicas, service.min_replicas, service.max_replicas, service.target_concurrency
            )
            wanted = self._within_budget(service, recommender.recommend(now, load, bounds))
            if wanted != service.replicas and service.id not in self.scaling:
                logger.info("scaling service %s from %d to %d replicas", service.id, service.replicas, wanted)
                task = asyncio.create_task(self._scale(service.id, wanted))
                self.scaling[service.id] = task
        for gone in set(self.recommenders) - watched:
            del self.recommenders[gone]

    def _within_budget(self, service: Service, wanted: int) -> int:
        """``wanted``, or the most replicas the process budget allows (logged once while held)."""
        allowed = self.platform.budget.replicas_within(service, wanted)
        if allowed >= wanted:
            self.held.discard(service.id)
        elif service.id not in self.held:
            self.held.add(service.id)
            budget = self.platform.budget
            logger.warning(
                "service %s stays at %d replicas, not %d: the process budget is reached "
                "(%d of %d processes in use, %s)",
                service.id,
                allowed,
                wanted,
                budget.in_use(),
                budget.limit,
                "INFERD_MAX_PROCESSES",
            )
        return allowed

    async def _scale(self, service_id: str, replicas: int) -> None:
        try:
            await self.platform.scale(service_id, replicas, within_budget=True)
        except InferdError as exc:  # stopped, deleted or rebounded meanwhile
            logger.info("service %s was not scaled: %s", service_id, exc)
        finally:
            self.scaling.pop(service_id, None)

    async def aclose(self) -> None:
        """Stop sampling and any scale under way (a half-done one is finished by the next control
        process: its replicas are recorded)."""
        tasks = [task for task in (self._task, *self.scaling.values()) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
