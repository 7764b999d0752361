"""What the data path is given for each endpoint: every service it routes to as its weight and its
upstreams, one per ready replica (`Routing.upstreams`), and the gRPC address of each.

A replica's readiness changing (started, crashed, restarted, retired) changes its service's upstreams:
`Routing.changed` records how many are ready and republishes the endpoints using the service, so a
new replica takes requests once its server is ready and one on its way out takes no new ones before
it drains. Weights between services never change here.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from inferd.core.errors import Conflict, NotFound
from inferd.platform.datapath import DataPath
from inferd.platform.records import Endpoint, Replica, Service, ServiceState
from inferd.platform.store import Store

logger = logging.getLogger("inferd.platform")

#: How long a switched-away service may take to answer what it holds before it is stopped.
DRAIN_SECONDS = 30.0


def address(port: int) -> str:
    return f"127.0.0.1:{port}"


class Routing:
    def __init__(self, store: Store, path: DataPath) -> None:
        self.store, self.path = store, path
        #: Replicas taken off the data path on their way out (by id).
        self.leaving: set[str] = set()
        #: What each service's routes last gave the data path: republished only on a change.
        self._published: dict[str, tuple[str, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: The bearer token a service takes (`inferd.platform.service_tokens`), None: none.
        self.token_of: Callable[[str], str | None] = lambda service_id: None

    def replicas_of(self, service: Service) -> list[Service | Replica]:
        """Its first replica (the service's record) and the others."""
        return [service, *self.store.replicas(service.id)]

    def upstreams(self, service: Service) -> tuple[str, ...]:
        """Where a service's share of an endpoint's requests goes: its ready replicas (not those
        leaving); its first replica's address when none is ready (a request then fails as it did
        before replicas: its service is unavailable, the other services' weights unchanged)."""
        ready = [
            address(replica.port)
            for replica in self.replicas_of(service)
            if replica.state is ServiceState.RUNNING and replica.port and replica.id not in self.leaving
        ]
        return tuple(ready) or (self.upstream(service.id),)

    def addresses(self, service: Service) -> list[str]:
        """Every replica's address (ready or not): where the service's requests may be in flight."""
        return [address(replica.port) for replica in self.replicas_of(service) if replica.port]

    def upstream(self, service_id: str) -> str:
        """The address of a service's first replica (Conflict before it has one)."""
        service = self.store.service(service_id)
        if service.port is None:
            raise Conflict(f"service {service_id} has no address yet; wait until it runs")
        return address(service.port)

    async def publish(self, endpoint: Endpoint) -> None:
        """Give the data path the endpoint's routes (each service's ready replicas, by its weight),
        the gRPC address of each replica that has one, its shadow, and the token each takes."""
        routes: list[tuple[tuple[str, ...], int]] = []
        grpc = {}
        tokens: dict[str, str] = {}
        for route in endpoint.routes:
            if not route.weight:
                continue
            service = self.store.service(route.service_id)
            upstreams = self._published[service.id] = self.upstreams(service)
            routes.append((upstreams, route.weight))
            self._tokens(service, upstreams, tokens)
            for replica in self.replicas_of(service):
                if replica.port is not None and replica.grpc_port is not None:
                    grpc[address(replica.port)] = address(replica.grpc_port)
        shadow = None
        if endpoint.shadow_service_id:
            shadowed = self.store.service(endpoint.shadow_service_id)
            upstreams = self._published[shadowed.id] = self.upstreams(shadowed)
            shadow = (upstreams[0], endpoint.shadow_percent)
            self._tokens(shadowed, upstreams, tokens)
        await self.path.route(endpoint.name, routes, shadow, grpc, tokens)

    def _tokens(self, service: Service, upstreams: tuple[str, ...], tokens: dict[str, str]) -> None:
        token = self.token_of(service.id)
        if token is not None:
            tokens.update(dict.fromkeys(upstreams, token))

    def token_at(self, upstream: str) -> str | None:
        """The token of the service one of whose replicas listens at ``upstream``."""
        for service in self.store.services():
            if upstream in self.addresses(service):
                return self.token_of(service.id)
        return None

    async def republish(self, service_id: str) -> None:
        """Publish again every endpoint routing or mirroring to the service."""
        for endpoint in self.store.endpoints():
            uses = {route.service_id for route in endpoint.routes if route.weight}
            if service_id in uses or endpoint.shadow_service_id == service_id:
                try:
                    await self.publish(endpoint)
                except Exception:  # the next change publishes again; the rest must go on
                    logger.exception("republishing endpoint %s failed", endpoint.name)

    def changed(self, service_id: str) -> None:
        """A replica of the service changed: record how many are ready, and republish its endpoints
        when its upstreams changed (from the event loop; without one, at exit, nothing routes)."""
        try:
            service = self.store.service(service_id)
        except NotFound:
            return
        ready = sum(1 for replica in self.replicas_of(service) if replica.state is ServiceState.RUNNING)
        if ready != service.ready_replicas:
            service = self.store.update_service(service.id, ready_replicas=ready)
        published = self._published.get(service_id)
        if published is None or service.port is None or self.upstreams(service) == published:
            return
        try:
            task = asyncio.get_running_loop().create_task(self.republish(service_id))
        except RuntimeError:
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def pick_upstream(self, endpoint_name: str) -> str | None:
        """A replica of a service of endpoint ``endpoint_name``, the service picked by weight, as the
        data path would: for a caller that does not go through it (ABEJA's clients, when HAProxy
        carries the endpoints)."""
        for endpoint in self.store.endpoints():
            if endpoint.name == endpoint_name:
                weighted = [(route.service_id, route.weight) for route in endpoint.routes if route.weight]
                if not weighted:
                    return None
                (chosen,) = random.choices([sid for sid, _ in weighted], [w for _, w in weighted])
                return random.choice(self.upstreams(self.store.service(chosen)))
        raise NotFound(f"endpoint {endpoint_name!r} is not served")

    async def drain(self, before: Endpoint, after: Endpoint) -> None:
        """Wait until the services ``before`` routed to and ``after`` does not hold nothing."""
        still = {route.service_id for route in after.routes if route.weight}
        gone = [route.service_id for route in before.routes if route.weight and route.service_id not in still]
        upstreams = [found for sid in gone for found in self.addresses(self.store.service(sid))]
        await asyncio.gather(*(self.path.drained(upstream, DRAIN_SECONDS) for upstream in upstreams))

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
