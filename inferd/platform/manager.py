"""The platform's operations, each keeping the store, the artifact store, the running services and the
data path (the gateway or HAProxy) in step: the control API, the CLI's verbs and the ABEJA-compatible
routes all call this and nothing below it.

The order of each operation is what leaves nothing half-done: a record is written last when the work
can fail (a version's bundle is stored before its record), first when a process must find it (a
service or a replica is recorded ``starting`` before its process starts, so a crash of the control
process leaves a record to re-adopt or restart). An endpoint switch takes effect in the gateway at
once; a service no longer routed to is stopped only once its in-flight requests are answered.

A local service runs as replicas, each an ``inferd serve`` of its own on its own loopback port; the
endpoints balance a service's share of their requests over its ready replicas (`Platform.scale`
starts and retires them, `inferd.platform.scaling` decides how many). A replica joins the data path
once its server is ready and leaves it before it is stopped, after its in-flight requests are
answered. Each replica is restarted and given up on (``failed``) by the runner's `RestartPolicy`,
as a service is; the service's ``reason`` shows a troubled replica's while its own server runs, and
the next scaling starts a failed replica again.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from inferd.core.errors import Conflict, InvalidInput, NotFound
from inferd.platform.artifacts import ArtifactStore, Bundle
from inferd.platform.budget import Budget, Companion, per_replica
from inferd.platform.conditions import check_condition
from inferd.platform.datapath import DataPath
from inferd.platform.model_sources import check_model_source
from inferd.platform.records import (
    Deployment,
    Endpoint,
    Replica,
    Route,
    Scaling,
    Service,
    ServiceState,
    Version,
    of_deployment,
    replica_of,
)
from inferd.platform.routing import DRAIN_SECONDS, Routing, address
from inferd.platform.runs import Runs
from inferd.platform.service_folders import unpacked_bundle
from inferd.platform.service_tokens import ServiceTokens
from inferd.platform.services import LocalRunner, RestartPolicy, ServiceSpec, StateChange
from inferd.platform.services.logs import ServiceLog
from inferd.platform.store import Store
from inferd.platform.targets import check_new_target, check_unpacked_target

logger = logging.getLogger("inferd.platform")

LIVE_STATES = (ServiceState.STARTING, ServiceState.RUNNING)


class Platform:
    """Deployments, versions, services and endpoints of one control process."""

    def __init__(
        self,
        store: Store,
        artifacts: ArtifactStore,
        path: DataPath,
        root: Path,
        policy: RestartPolicy | None = None,
        allowed_outside_targets: Sequence[str] = (),
    ) -> None:
        self.store, self.artifacts, self.path = store, artifacts, path
        #: Where versions' targets may point besides their bundles (`inferd.platform.targets`).
        self.allowed_outside_targets = tuple(allowed_outside_targets)
        #: Unpacked versions, one folder per service (a service may write into its folder).
        self.services_root = root / "services"
        self.log_dir = root / "logs"
        #: Every replica's process, each restarted and given up on by ``policy``.
        self.runner = LocalRunner(self._changed, policy=policy)
        #: Runs and triggers (`inferd.platform.runs`).
        self.runs = Runs(store, artifacts, root)
        #: The endpoints as the data path has them: each service's ready replicas by its weight.
        self.routing = Routing(store, path)
        #: Each service's own bearer token (never the control process's).
        self.tokens = ServiceTokens(root)
        self.routing.token_of = self.token_of
        #: One at a time per service: its start, stop and scaling.
        self._locks: dict[str, asyncio.Lock] = {}
        #: The processes its services and runs may take (`inferd.platform.budget`); the control
        #: process sets the limit from its settings.
        #: Other owners of processes (ABEJA training jobs): in the budget, detached with the runs.
        self.companions: list[Companion] = []
        running = lambda: self.runs.active() + sum(c.active() for c in self.companions)  # noqa: E731
        self.budget = Budget(max(16, 4 * (os.cpu_count() or 1)), self.store.services, running)
        self.runs.admit = lambda: self.budget.check(1)

    # ---- deployments ----

    def create_deployment(self, name: str, description: str = "") -> Deployment:
        return self.store.create_deployment(name, description)

    def delete_deployment(self, name_or_id: str) -> None:
        deployment = self.store.deployment(name_or_id)
        digests = {version.digest for version in self.store.versions(deployment.id)}
        self.store.delete_deployment(deployment.id)
        self._discard_bundles(digests)

    # ---- versions ----

    def add_version(
        self,
        deployment: str,
        label: str,
        archive: BinaryIO | Path,
        target: str = ".",
        dialect: str = "auto",
        environment: Mapping[str, str] | None = None,
        version_id: str | None = None,
    ) -> Version:
        """A new version from an uploaded archive or a project folder: stored as a bundle first.
        ``version_id`` is an id made earlier (`Store.add_version`)."""
        found = self.store.deployment(deployment)
        check_new_target(target, self.allowed_outside_targets)
        bundle: Bundle = (
            self.artifacts.put_folder(archive)
            if isinstance(archive, Path)
            else self.artifacts.put_archive(archive)
        )
        variables = dict(environment or {})
        try:
            return self.store.add_version(
                found.id, label, bundle.digest, bundle.size, target, dialect, variables, version_id
            )
        finally:
            self.artifacts.release(bundle.digest)
            self._discard_bundles({bundle.digest})  # kept once recorded; a refused version leaves none

    def delete_version(self, version_id: str) -> None:
        """Delete a version (`Store.delete_version`'s refusals), and its bundle when no other version
        is of the same content."""
        version = self.store.version(version_id)
        self.store.delete_version(version.id)
        self._discard_bundles({version.digest})

    def _discard_bundles(self, digests: set[str]) -> None:
        """This machine's copies of the bundles no version is of any more (object storage keeps its)."""
        for digest in digests:
            self.artifacts.discard(digest, self.store.names_bundle)

    # ---- services ----

    async def create_service(
        self,
        deployment: str,
        version_id: str,
        workers: int = 1,
        environment: Mapping[str, str] | None = None,
        engine: str = "local",
        scaling: Scaling | None = None,
    ) -> Service:
        """Record a service of ``version_id`` and start it; it is ``starting`` until its server is ready.
        ``engine`` ``ray`` runs it on Ray Serve (InvalidInput when Ray is not installed), which scales
        it itself between ``scaling``'s bounds. A version whose model is a storage URI the store has
        not got, refuses or cannot be reached records nothing (`check_model_source`), nor does one
        whose bundle this machine lacks and cannot fetch from the artifact store's object storage."""
        found = self.store.deployment(deployment)
        version = of_deployment(self.store.version(version_id), found, InvalidInput)
        if engine == "ray" and importlib.util.find_spec("ray") is None:
            raise InvalidInput("the ray engine needs Ray Serve beside inferd: pip install 'inferd[ray]'")
        check_new_target(version.target, self.allowed_outside_targets)  # one recorded before the check
        await check_model_source(version.target, {**version.environment, **(environment or {})})
        await asyncio.to_thread(self.artifacts.open, version.digest)
        scaling = scaling or Scaling()
        replicas = 1 if engine == "ray" else max(1, scaling.initial or scaling.min_replicas)
        given = {**version.environment, **(environment or {})}
        # no await from the check to the reservation: two creations cannot both take the last room
        self.budget.check(replicas * per_replica(engine, workers, given))
        service = self.store.add_service(
            found.id,
            version.id,
            engine=engine,
            workers=workers,
            environment=dict(environment or {}),
            min_replicas=scaling.min_replicas,
            max_replicas=scaling.max_replicas,
            target_concurrency=scaling.target_concurrency,
            replicas=scaling.initial,
        )
        self.budget.reserve(service.id)
        return await self.start_service(service.id)

    async def start_service(self, service_id: str) -> Service:
        """Start its first replica, and the others it wants (each joins the endpoints when ready)."""
        async with self._lock(service_id):
            service = self.store.service(service_id)
            if service.state in LIVE_STATES:
                self.budget.release(service.id)
                return service
            try:
                self.budget.check_service(service)
                self.budget.reserve(service.id)
                version = self.store.version(service.version_id)
                await check_model_source(version.target, {**version.environment, **service.environment})
                check_new_target(version.target, self.allowed_outside_targets)
                folder = await self._unpacked(service, version)
                check_unpacked_target(version.target, folder, self.allowed_outside_targets)
                service = self.store.update_service(service.id, state=ServiceState.STARTING, reason="")
            finally:
                self.budget.release(service.id)
            await self.runner.start(self._spec(service, version, folder))
            await self._reconcile(service.id)
        return self.store.service(service.id)

    async def stop_service(self, service_id: str) -> Service:
        service = self.store.service(service_id)
        if self._routed(service.id):
            raise Conflict(
                f"service {service.id} receives traffic from an endpoint; route the endpoint elsewhere first"
            )
        async with self._lock(service.id):
            replicas = self.store.replicas(service.id)
            await asyncio.gather(*(self._stop_replica(replica) for replica in replicas))
            # a service stopped (or failed) before this control process started is not its runner's:
            # nothing of it runs, and its record says so already
            if service.id in self.runner.service_ids():
                await self.runner.stop(service.id)
            # its next start begins with its fewest replicas again
            self.store.update_service(service.id, replicas=max(1, service.min_replicas))
        return self.store.service(service.id)

    # ---- replicas ----

    async def scale(self, service_id: str, replicas: int, within_budget: bool = False) -> Service:
        """Run ``replicas`` replicas of a live local service (within its min and max: InvalidInput
        otherwise): new ones join its endpoints once ready; the last ones leave the endpoints, answer
        what they hold, and stop. More replicas than the process budget allows are refused
        (BudgetExceeded), or, ``within_budget``, as many as it allows are run."""
        async with self._lock(service_id):
            service = self.store.service(service_id)
            if within_budget:
                replicas = self.budget.replicas_within(service, replicas)
            self.budget.check_growth(service, replicas)
            service = self.store.update_service(service_id, replicas=replicas)
            await self._reconcile(service.id)
        return self.store.service(service_id)

    async def set_scaling(self, service_id: str, scaling: Scaling) -> Service:
        """New bounds and target for a service; its replicas are brought within the bounds at once."""
        async with self._lock(service_id):
            service = self.store.service(service_id)
            wanted = min(max(service.replicas, scaling.min_replicas, 1), scaling.max_replicas)
            self.budget.check_growth(service, scaling.initial or wanted)
            service = self.store.update_service(
                service.id,
                min_replicas=scaling.min_replicas,
                max_replicas=scaling.max_replicas,
                target_concurrency=scaling.target_concurrency,
                replicas=scaling.initial or wanted,
            )
            await self._reconcile(service.id)
        return self.store.service(service_id)

    async def _reconcile(self, service_id: str, retry_failed: bool = True) -> None:
        """Start the replicas a live local service lacks (and, with ``retry_failed``, those its
        restart policy gave up on: a request to scale is one to try again), retire those beyond
        what it wants."""
        service = self.store.service(service_id)
        if service.engine != "local" or service.state not in LIVE_STATES:
            return
        have = {replica.number: replica for replica in self.store.replicas(service.id)}
        version = self.store.version(service.version_id)
        folder = await self._unpacked(service, version)
        for number in range(1, service.replicas):
            replica = have.get(number)
            if replica is None:
                replica = self.store.add_replica(service.id, number)
            elif not (retry_failed and replica.state is ServiceState.FAILED):
                continue
            await self.runner.start(self._replica_spec(self._spec(service, version, folder), replica))
        extra = sorted((r for n, r in have.items() if n >= service.replicas), key=lambda r: -r.number)
        await asyncio.gather(*(self._retire(service, replica) for replica in extra))

    async def _retire(self, service: Service, replica: Replica) -> None:
        """Off the data path, its in-flight requests answered, then stopped and forgotten."""
        self.routing.leaving.add(replica.id)
        try:
            await self.routing.republish(service.id)
            if replica.port is not None:
                await self.path.drained(address(replica.port), DRAIN_SECONDS)
            await self._stop_replica(replica)
        finally:
            self.routing.leaving.discard(replica.id)

    async def _stop_replica(self, replica: Replica) -> None:
        if replica.id in self.runner.service_ids():
            await self.runner.stop(replica.id)
        self.store.delete_replica(replica.id)
        self._show_replicas_reason(replica.service_id)
        self.routing.changed(replica.service_id)

    async def delete_service(self, service_id: str) -> None:
        """Stop it, then forget it: its record, its folder and its logs (its own and its replicas',
        with their rotated copies: none can be asked for once it is gone)."""
        service = await self.stop_service(service_id)
        self.store.delete_service(service.id)
        shutil.rmtree(self.services_root / service.id, ignore_errors=True)
        for log in self.log_dir.glob(f"{service.id}.*log*"):
            log.unlink(missing_ok=True)

    def logs(self, service_id: str, lines: int = 100) -> list[str]:
        """The last lines of a service's log, whether it runs under this control process or not."""
        service = self.store.service(service_id)
        return ServiceLog(self.log_dir / f"{service.id}.log").tail(lines)

    # ---- endpoints ----

    async def set_endpoint(
        self,
        deployment: str,
        name: str,
        routes: Sequence[Route],
        shadow_service_id: str | None = None,
        shadow_percent: int = 0,
        if_match: str | None = None,
        if_none_match: str | None = None,
    ) -> Endpoint:
        """Create or change endpoint ``name``: the gateway routes by the new weights from the next
        request; services that lost their traffic finish what they hold (their drain) before this
        returns. ``if_match``/``if_none_match`` are HTTP's conditions on the endpoint as it is (its
        `Endpoint.etag`); they are checked and the change stored with nothing awaited in between,
        so no other change comes between them."""
        found = self.store.deployment(deployment)
        existing = {endpoint.name: endpoint for endpoint in self.store.endpoints(found.id)}
        check_condition(found.name, name, existing.get(name), if_match, if_none_match)
        for route in routes:
            if route.weight and self.store.service(route.service_id).state is not ServiceState.RUNNING:
                raise Conflict(f"service {route.service_id} is not running; start it before routing to it")
        before = existing.get(name)
        if before is None:
            endpoint = self.store.add_endpoint(found.id, name, routes, shadow_service_id, shadow_percent)
        else:
            endpoint = self.store.update_endpoint(
                before.id, routes=routes, shadow_service_id=shadow_service_id, shadow_percent=shadow_percent
            )
        await self.routing.publish(endpoint)
        if before is not None:
            await self.routing.drain(before, endpoint)
        return endpoint

    async def delete_endpoint(self, endpoint_id: str) -> None:
        endpoint = self.store.endpoint(endpoint_id)
        self.store.delete_endpoint(endpoint.id)
        await self.path.unroute(endpoint.name)

    # ---- the control process's life ----

    async def restore(self) -> None:
        """After a restart of the control process: adopt the services still running with their
        replicas (or start them again), give the gateway every endpoint, and bring each service to
        the replicas it wants."""
        for service in self.store.services():
            replicas = self.store.replicas(service.id)
            live = service.state in LIVE_STATES
            if not live and not replicas:
                continue
            version = self.store.version(service.version_id)
            spec = self._spec(service, version, await self._unpacked(service, version))
            if live:
                await self.runner.adopt(spec, service.pid, service.port, service.restarts)
            for replica in replicas:
                await self.runner.adopt(
                    self._replica_spec(spec, replica), replica.pid, replica.port, replica.restarts
                )
                if not live:  # left by a stop the previous control process did not finish
                    await self._stop_replica(replica)
        for endpoint in self.store.endpoints():
            await self.routing.publish(endpoint)
        for service in self.store.services():
            await self._reconcile(service.id, retry_failed=False)  # adopt() started them again
        await self.runs.restore()

    def detach(self) -> None:
        """Stop supervising; the services keep running, to be adopted by the next control process."""
        self.routing.close()
        self.runner.detach()
        self.runs.detach()
        for companion in self.companions:
            companion.detach()

    # ---- inside ----

    def _lock(self, service_id: str) -> asyncio.Lock:
        return self._locks.setdefault(service_id, asyncio.Lock())

    def _changed(self, runner_id: str, change: StateChange) -> None:
        """A replica's state changed (the service's own record for its first): recorded, and the
        endpoints routing to its service republished when its ready replicas changed."""
        service_id, number = replica_of(runner_id)
        values = {
            "state": change.state,
            "port": change.port,
            "grpc_port": change.grpc_port,
            "pid": change.pid,
            "reason": change.reason,
            "restarts": change.restarts,
        }
        if number == 0:
            if change.state is ServiceState.RUNNING:  # its own reason gone: its replicas' may show
                values["reason"] = self._replicas_reason(service_id)
            self.store.update_service(service_id, **values)
        else:
            try:
                self.store.update_replica(runner_id, **values)
            except NotFound:  # retired meanwhile
                return
            self._show_replicas_reason(service_id)
        self.routing.changed(service_id)

    def _replicas_reason(self, service_id: str) -> str:
        """Why a replica of the service is not running, for the service's record: the first replica
        backing off after a failed start or crash (its reason says when it starts again), or given
        up on (``failed``); empty when every replica runs or starts for the first time."""
        for replica in sorted(self.store.replicas(service_id), key=lambda replica: replica.number):
            if replica.state is ServiceState.FAILED:
                return f"replica {replica.number} failed: {replica.reason}"
            if replica.state is ServiceState.STARTING and replica.reason:
                return f"replica {replica.number}: {replica.reason}"
        return ""

    def _show_replicas_reason(self, service_id: str) -> None:
        """The service's reason says its replicas' while its own server runs (else it says its own)."""
        try:
            service = self.store.service(service_id)
        except NotFound:
            return
        if service.state is ServiceState.RUNNING:
            reason = self._replicas_reason(service_id)
            if reason != service.reason:
                self.store.update_service(service_id, reason=reason)

    async def _unpacked(self, service: Service, version: Version) -> Path:
        deployment = self.store.deployment(service.deployment_id)
        return await unpacked_bundle(
            self.artifacts, self.services_root / service.id, deployment.name, version
        )

    def _spec(self, service: Service, version: Version, folder: Path) -> ServiceSpec:
        return ServiceSpec(
            service_id=service.id,
            folder=folder,
            log_dir=self.log_dir,
            target=version.target,
            dialect=version.dialect,
            workers=service.workers,
            environment={**version.environment, **service.environment, **self.tokens.environment(service.id)},
            port=service.port,
            engine=service.engine,
            grpc_port=service.grpc_port,
            autoscale=(service.min_replicas, service.max_replicas) if service.engine == "ray" else None,
            target_concurrency=service.target_concurrency,
            deployment=self.store.deployment(service.deployment_id).name,
        )

    @staticmethod
    def _replica_spec(spec: ServiceSpec, replica: Replica) -> ServiceSpec:
        """The service's spec for one more replica: its id, its own ports."""
        return replace(spec, service_id=replica.id, port=replica.port, grpc_port=replica.grpc_port)

    def _routed(self, service_id: str) -> bool:
        return any(
            (route.service_id == service_id and route.weight > 0) or endpoint.shadow_service_id == service_id
            for endpoint in self.store.endpoints()
            for route in endpoint.routes
        )

    def token_of(self, service_id: str) -> str:
        """The bearer token service ``service_id`` takes (what its callers present)."""
        return self.tokens.of(service_id)

    def pick_upstream(self, endpoint_name: str) -> str | None:
        """A replica of a service of the endpoint, the service picked by weight (`Routing.pick_upstream`)."""
        return self.routing.pick_upstream(endpoint_name)
