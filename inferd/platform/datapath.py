"""What carries an endpoint's requests to its services: the embedded gateway (`GatewayPath`, the
default) or HAProxy (`inferd.platform.haproxy`). The platform only routes, unroutes and waits for a
service to drain; each data path does it its own way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from inferd.platform.gateway import EndpointTable

#: (upstream "127.0.0.1:port", weight) pairs.
Routes = Sequence[tuple[str, int]]
#: (upstream, percent of requests copied) or None.
ShadowRoute = tuple[str, float] | None
#: Upstream → the gRPC address (``"127.0.0.1:port"``) of the same service, for those serving gRPC.
GrpcAddresses = Mapping[str, str]


class DataPath(Protocol):
    async def route(
        self, name: str, routes: Routes, shadow: ShadowRoute, grpc: GrpcAddresses | None = None
    ) -> None:
        """Send endpoint ``name``'s next requests by these weights (and copies to ``shadow``), its
        gRPC calls by the same weights to the ``grpc`` address of each upstream."""

    async def unroute(self, name: str) -> None:
        """Forget endpoint ``name``: its requests are answered 404."""

    async def drained(self, upstream: str, timeout: float) -> bool:
        """Wait until ``upstream`` has no request (nor gRPC call) in flight; False when ``timeout``
        passed first."""


class GatewayPath:
    """The embedded gateway's table, as a data path."""

    def __init__(self, table: EndpointTable) -> None:
        self.table = table

    async def route(
        self, name: str, routes: Routes, shadow: ShadowRoute, grpc: GrpcAddresses | None = None
    ) -> None:
        self.table.set(name, routes, shadow, grpc)

    async def unroute(self, name: str) -> None:
        self.table.remove(name)

    async def drained(self, upstream: str, timeout: float) -> bool:
        return await self.table.drained(upstream, timeout)
