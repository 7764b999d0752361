"""What carries an endpoint's requests to its services: the embedded gateway (`GatewayPath`, the
default) or HAProxy (`inferd.platform.haproxy`). The platform only routes, unroutes, waits for a
service to drain and samples the requests in flight (for the autoscaler); each data path does it its
own way. A route is one service: its weight, and its upstreams (one per ready replica) between which
the data path balances its share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from inferd.platform.gateway import EndpointTable

#: (upstream "127.0.0.1:port" or a service's upstreams, weight) pairs.
Routes = Sequence[tuple[str | Sequence[str], int]]
#: (upstream, percent of requests copied) or None.
ShadowRoute = tuple[str, float] | None
#: Upstream → the gRPC address (``"127.0.0.1:port"``) of the same service, for those serving gRPC.
GrpcAddresses = Mapping[str, str]
#: Upstream → the bearer token its service takes (`inferd.platform.service_tokens`).
UpstreamTokens = Mapping[str, str]


class DataPath(Protocol):
    async def route(
        self,
        name: str,
        routes: Routes,
        shadow: ShadowRoute,
        grpc: GrpcAddresses | None = None,
        tokens: UpstreamTokens | None = None,
    ) -> None:
        """Send endpoint ``name``'s next requests by these weights (and copies to ``shadow``), its
        gRPC calls by the same weights to the ``grpc`` address of each upstream, each with the
        token of ``tokens`` its upstream takes (a data path that cannot tell upstreams apart there
        sends one token of its own that every service takes)."""

    async def unroute(self, name: str) -> None:
        """Forget endpoint ``name``: its requests are answered 404."""

    async def drained(self, upstream: str, timeout: float) -> bool:
        """Wait until ``upstream`` has no request (nor gRPC call) in flight; False when ``timeout``
        passed first."""

    async def inflight(self) -> Mapping[str, int]:
        """The requests (and gRPC calls) each upstream holds now; upstreams holding none may be
        left out."""


def spread(routes: Routes, scale: int = 1) -> dict[str, int]:
    """Each upstream's own weight, for a data path that knows no groups: a route's weight times
    ``scale`` shared between its upstreams as evenly as whole numbers allow (the first ones get
    the remainder), so each route's total stays its weight exactly."""
    weights: dict[str, int] = {}
    for upstreams, weight in routes:
        group = [upstreams] if isinstance(upstreams, str) else list(upstreams)
        share, extra = divmod(weight * scale, len(group))
        for index, upstream in enumerate(group):
            weights[upstream] = share + (1 if index < extra else 0)
    return weights


class GatewayPath:
    """The embedded gateway's table, as a data path."""

    def __init__(self, table: EndpointTable) -> None:
        self.table = table

    async def route(
        self,
        name: str,
        routes: Routes,
        shadow: ShadowRoute,
        grpc: GrpcAddresses | None = None,
        tokens: UpstreamTokens | None = None,
    ) -> None:
        self.table.set(name, routes, shadow, grpc, tokens)

    async def unroute(self, name: str) -> None:
        self.table.remove(name)

    async def drained(self, upstream: str, timeout: float) -> bool:
        return await self.table.drained(upstream, timeout)

    async def inflight(self) -> Mapping[str, int]:
        return self.table.inflight_all()
