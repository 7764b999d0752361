"""The platform's operations, each keeping the store, the artifact store, the running services and the
data path (the gateway or HAProxy) in step: the control API, the CLI's verbs and the ABEJA-compatible
routes all call this and nothing below it.

The order of each operation is what leaves nothing half-done: a record is written last when the work
can fail (a version's bundle is stored before its record), first when a process must find it (a
service is recorded ``starting`` before its process starts, so a crash of the control process leaves
a record to re-adopt or restart). An endpoint switch takes effect in the gateway at once; a service
no longer routed to is stopped only once its in-flight requests are answered.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import random
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from inferd.core.errors import Conflict, InvalidInput, NotFound
from inferd.platform.artifacts import ArtifactStore, Bundle
from inferd.platform.datapath import DataPath
from inferd.platform.records import Deployment, Endpoint, Route, Service, ServiceState, Version, of_deployment
from inferd.platform.runs import Runs
from inferd.platform.services import LocalRunner, ServiceSpec, StateChange
from inferd.platform.services.logs import ServiceLog
from inferd.platform.store import Store

logger = logging.getLogger("inferd.platform")

#: How long a switched-away service may take to answer what it holds before it is stopped.
DRAIN_SECONDS = 30.0
LIVE_STATES = (ServiceState.STARTING, ServiceState.RUNNING)


class Platform:
    """Deployments, versions, services and endpoints of one control process."""

    def __init__(self, store: Store, artifacts: ArtifactStore, path: DataPath, root: Path) -> None:
        self.store, self.artifacts, self.path = store, artifacts, path
        #: Unpacked versions, one folder per service (a service may write into its folder).
        self.services_root = root / "services"
        self.log_dir = root / "logs"
        self.runner = LocalRunner(self._changed)
        #: Runs and triggers (`inferd.platform.runs`).
        self.runs = Runs(store, artifacts, root)

    # ---- deployments ----

    def create_deployment(self, name: str, description: str = "") -> Deployment:
        return self.store.create_deployment(name, description)

    def delete_deployment(self, name_or_id: str) -> None:
        deployment = self.store.deployment(name_or_id)
        self.store.delete_deployment(deployment.id)

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
        bundle: Bundle = (
            self.artifacts.put_folder(archive)
            if isinstance(archive, Path)
            else self.artifacts.put_archive(archive)
        )
        return self.store.add_version(
            found.id, label, bundle.digest, bundle.size, target, dialect, dict(environment or {}), version_id
        )

    # ---- services ----

    async def create_service(
        self,
        deployment: str,
        version_id: str,
        workers: int = 1,
        environment: Mapping[str, str] | None = None,
        engine: str = "local",
    ) -> Service:
        """Record a service of ``version_id`` and start it; it is ``starting`` until its server is ready.
        ``engine`` ``ray`` runs it on Ray Serve (InvalidInput when Ray is not installed)."""
        found = self.store.deployment(deployment)
        version = of_deployment(self.store.version(version_id), found, InvalidInput)
        if engine == "ray" and importlib.util.find_spec("ray") is None:
            raise InvalidInput("the ray engine needs Ray Serve beside inferd: pip install 'inferd[ray]'")
        service = self.store.add_service(
            found.id, version.id, engine=engine, workers=workers, environment=dict(environment or {})
        )
        return await self.start_service(service.id)

    async def start_service(self, service_id: str) -> Service:
        service = self.store.service(service_id)
        if service.state in LIVE_STATES:
            return service
        version = self.store.version(service.version_id)
        folder = self._unpacked(service, version)
        self.store.update_service(service.id, state=ServiceState.STARTING, reason="")
        await self.runner.start(self._spec(service, version, folder))
        return self.store.service(service.id)

    async def stop_service(self, service_id: str) -> Service:
        service = self.store.service(service_id)
        if self._routed(service.id):
            raise Conflict(
                f"service {service.id} receives traffic from an endpoint; route the endpoint elsewhere first"
            )
        await self.runner.stop(service.id)
        return self.store.service(service.id)

    async def delete_service(self, service_id: str) -> None:
        service = await self.stop_service(service_id)
        self.store.delete_service(service.id)
        shutil.rmtree(self.services_root / service.id, ignore_errors=True)

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
    ) -> Endpoint:
        """Create or change endpoint ``name``: the gateway routes by the new weights from the next
        request; services that lost their traffic finish what they hold (their drain) before this
        returns."""
        found = self.store.deployment(deployment)
        existing = {endpoint.name: endpoint for endpoint in self.store.endpoints(found.id)}
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
        await self._publish(endpoint)
        if before is not None:
            await self._drain(before, endpoint)
        return endpoint

    async def delete_endpoint(self, endpoint_id: str) -> None:
        endpoint = self.store.endpoint(endpoint_id)
        self.store.delete_endpoint(endpoint.id)
        await self.path.unroute(endpoint.name)

    # ---- the control process's life ----

    async def restore(self) -> None:
        """After a restart of the control process: adopt the services still running (or start them
        again), and give the gateway every endpoint."""
        for service in self.store.services():
            if service.state not in LIVE_STATES:
                continue
            version = self.store.version(service.version_id)
            spec = self._spec(service, version, self._unpacked(service, version))
            await self.runner.adopt(spec, service.pid, service.port, service.restarts)
        for endpoint in self.store.endpoints():
            await self._publish(endpoint)
        await self.runs.restore()

    def detach(self) -> None:
        """Stop supervising; the services keep running, to be adopted by the next control process."""
        self.runner.detach()
        self.runs.detach()

    # ---- inside ----

    def _changed(self, service_id: str, change: StateChange) -> None:
        self.store.update_service(
            service_id,
            state=change.state,
            port=change.port,
            grpc_port=change.grpc_port,
            pid=change.pid,
            reason=change.reason,
            restarts=change.restarts,
        )

    def _unpacked(self, service: Service, version: Version) -> Path:
        folder = self.services_root / service.id
        if not folder.exists():
            self.artifacts.unpack(version.digest, folder)
        return folder

    def _spec(self, service: Service, version: Version, folder: Path) -> ServiceSpec:
        return ServiceSpec(
            service_id=service.id,
            folder=folder,
            log_dir=self.log_dir,
            target=version.target,
            dialect=version.dialect,
            workers=service.workers,
            environment={**version.environment, **service.environment},
            port=service.port,
            engine=service.engine,
            grpc_port=service.grpc_port,
        )

    def _routed(self, service_id: str) -> bool:
        return any(
            (route.service_id == service_id and route.weight > 0) or endpoint.shadow_service_id == service_id
            for endpoint in self.store.endpoints()
            for route in endpoint.routes
        )

    async def _publish(self, endpoint: Endpoint) -> None:
        """Give the gateway the endpoint's upstreams (the loopback ports of its services), and the
        gRPC port of each that has one."""
        routes, grpc = [], {}
        for route in endpoint.routes:
            if not route.weight:
                continue
            service = self.store.service(route.service_id)
            upstream = self._upstream(route.service_id)
            routes.append((upstream, route.weight))
            if service.grpc_port is not None:
                grpc[upstream] = f"127.0.0.1:{service.grpc_port}"
        shadow = (
            (self._upstream(endpoint.shadow_service_id), endpoint.shadow_percent)
            if endpoint.shadow_service_id
            else None
        )
        await self.path.route(endpoint.name, routes, shadow, grpc)

    def pick_upstream(self, endpoint_name: str) -> str | None:
        """A service of endpoint ``endpoint_name`` picked by weight, as the data path would: for a
        caller that does not go through it (ABEJA's clients, when HAProxy carries the endpoints)."""
        for endpoint in self.store.endpoints():
            if endpoint.name == endpoint_name:
                weighted = [(route.service_id, route.weight) for route in endpoint.routes if route.weight]
                if not weighted:
                    return None
                (chosen,) = random.choices([sid for sid, _ in weighted], [w for _, w in weighted])
                return self._upstream(chosen)
        raise NotFound(f"endpoint {endpoint_name!r} is not served")

    def _upstream(self, service_id: str) -> str:
        service = self.store.service(service_id)
        if service.port is None:
            raise Conflict(f"service {service_id} has no address yet; wait until it runs")
        return f"127.0.0.1:{service.port}"

    async def _drain(self, before: Endpoint, after: Endpoint) -> None:
        still = {route.service_id for route in after.routes if route.weight}
        gone = [route.service_id for route in before.routes if route.weight and route.service_id not in still]
        await asyncio.gather(*(self.path.drained(self._upstream(sid), DRAIN_SECONDS) for sid in gone))
