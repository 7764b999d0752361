"""A server's own port forwarded to its Ray Serve application at a route prefix.

On a Ray cluster that several servers share, Ray Serve has one HTTP proxy per node and each server's
application answers under a prefix of its own (``ray_route_prefix``). The server still listens on its
own ``port`` with the paths its clients know: `Forward` sends each request there to the same path under
the prefix, at the proxy, and streams the answer back. Method, headers (but the hop-by-hop ones and
``Host``), body and status pass unchanged; a proxy that cannot be reached is a 502 naming the
application, never the address.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.types import Receive, Scope, Send

from inferd.core.errors import BadGateway
from inferd.server.errors import error_response

#: Headers of one connection (RFC 9110 7.6.1), and ``Host``, which the client sets for the proxy.
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade"}
    | {b"host", b"expect"}
)


class Forward:
    """An ASGI app sending every HTTP request to ``base`` (``http://127.0.0.1:8000/prefix``) + its
    path; ``name`` (the application's) is what a 502 says."""

    def __init__(self, base: str, name: str) -> None:
        self.base, self.name = base.rstrip("/"), name
        self.client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        url = self.base + path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")
        headers = [(key, value) for key, value in scope["headers"] if key.lower() not in HOP_BY_HOP]
        request = self.client.build_request(scope["method"], url, headers=headers, content=_body(receive))
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            reason = f"Ray Serve application '{self.name}' cannot be reached: {type(exc).__name__}"
            await error_response(BadGateway(reason))(scope, receive, send)
            return
        try:
            kept = [(key, value) for key, value in response.headers.raw if key.lower() not in HOP_BY_HOP]
            await send({"type": "http.response.start", "status": response.status_code, "headers": kept})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def close(self) -> None:
        await self.client.aclose()


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return
