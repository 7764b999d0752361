"""The data path ABEJA's clients call: ``POST {scheme}://{organization}.{api host}/deployments/{d}``
reaches the deployment's ``default`` endpoint, ``…/deployments/{d}/services/{s}`` one service. The
control process answers those paths (whatever its ``Host``) by sending the request on to the service's
loopback server, as the gateway would: through the endpoint table, so an endpoint switch waits for
these requests too. Every path of an ABEJA model server but its health check is the model, so the
request goes to ``/`` with its query string, body and content headers."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from starlette.requests import Request
from starlette.responses import Response

from inferd.core.errors import BadGateway, NotFound, Unavailable
from inferd.platform.gateway import EndpointTable

#: Request headers a model sees; the rest (credentials, hop-by-hop, Host) stay here.
PASSED = frozenset({"content-type", "accept", "accept-encoding", "user-agent"})
#: Response headers not copied: hop-by-hop ones, and those the response sets itself.
DROPPED = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server", "content-encoding"}
)


class Forwarder:
    """``table``: the embedded gateway's (its in-flight counts drain a switched service); None when
    HAProxy carries the endpoints: then ``pick`` chooses a service by weight, uncounted."""

    def __init__(
        self,
        table: EndpointTable | None,
        pick: Callable[[str], str | None],
        token_at: Callable[[str], str | None],
        timeout: float = 300.0,
    ) -> None:
        #: ``token_at``: the token of the service listening at an upstream, sent in place of the
        #: client's (`inferd.platform.service_tokens`).
        self.table, self.pick, self.token_at = table, pick, token_at
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0))

    async def to_endpoint(self, request: Request, name: str) -> Response:
        if self.table is None:
            upstream = self.pick(name)
            if upstream is None:
                raise Unavailable(f"endpoint {name!r} routes to no service")
            return await self.to_upstream(request, upstream)
        begun = self.table.begin(name)
        if begun is None:
            raise NotFound(f"endpoint {name!r} is not served")
        _, upstream, shadow = begun
        if shadow is not None:  # this path does not mirror: the copy is not sent
            self.table.end(shadow)
        if upstream is None:
            raise Unavailable(f"endpoint {name!r} routes to no service")
        try:
            return await self.to_upstream(request, upstream)
        finally:
            self.table.end(upstream)

    async def to_upstream(self, request: Request, upstream: str) -> Response:
        headers = {
            key: value
            for key, value in request.headers.items()
            if key in PASSED or key.startswith("x-abeja-")
        }
        token = self.token_at(upstream)
        if token:
            headers["authorization"] = f"Bearer {token}"
        query = request.url.query
        url = f"http://{upstream}/" + (f"?{query}" if query else "")
        try:
            answer = await self.client.request(
                request.method, url, content=await request.body(), headers=headers
            )
        except httpx.HTTPError as exc:
            raise BadGateway(f"the service at {upstream} did not answer: {type(exc).__name__}") from None
        kept = {key: value for key, value in answer.headers.items() if key.lower() not in DROPPED}
        return Response(answer.content, status_code=answer.status_code, headers=kept)
