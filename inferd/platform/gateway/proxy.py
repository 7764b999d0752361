"""The gateway as a raw ASGI app: each request of an endpoint forwarded to one of its upstreams.

Requests to ``/e/{endpoint}/{rest}`` go to ``/{rest}`` (query string kept) of an upstream the endpoint's
`Split` picks by weight; a gateway made for one endpoint (``endpoint=``) forwards every path as it
is. Method, path, headers and body pass through unchanged but for the hop-by-hop headers (RFC 9110
7.6.1, and ``Expect``: the gateway has read the body already); ``Host`` becomes the upstream's (a
loopback inferd answers only loopback names), the client's goes in ``X-Forwarded-Host``, and the
client's address is appended to ``X-Forwarded-For``. The answer's status, headers and body come back
as they are, streamed.

Errors are inferd's JSON: 404 for an unknown endpoint, 413 for a body over ``max_body_size``, 503
when no route has weight, 502 when the upstream cannot be reached or breaks off (the body names the
endpoint, never an internal address), 504 when it sends nothing for ``read_timeout`` seconds.

A shadow copy of a request goes out once the request's body is read, in a task of its own; at most
``max_shadow_inflight`` copies are in flight and bodies over ``max_shadow_body`` are not copied (both
counted as dropped), and a copy's answer is read and dropped, so a slow or dead shadow never touches
the client's answer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from starlette.types import Message, Receive, Scope, Send

from inferd.core.errors import BadGateway, InferdError, NotFound, PayloadTooLarge, RequestTimeout, Unavailable
from inferd.engines.upstream import (
    HOP_BY_HOP,
    Connection,
    Pool,
    UpstreamError,
    UpstreamTimeout,
    connection_tokens,
    relay,
)
from inferd.platform.gateway import metrics
from inferd.platform.gateway.table import EndpointTable
from inferd.protocols.status import status_of
from inferd.server.errors import error_response

logger = logging.getLogger("inferd.gateway")
PREFIX = "/e/"
#: Request headers not passed on: hop-by-hop ones, ``Host`` (replaced), ``Expect`` (the gateway
#: answered it), and those the gateway rewrites.
DROPPED = HOP_BY_HOP | {b"host", b"expect", b"x-forwarded-for"}
DEFAULT_MAX_BODY = 64 * 1024 * 1024


class Gateway:
    """Forwards the requests of the endpoints in ``table`` (or, with ``endpoint``, every request to
    that endpoint). Each upstream gets the ``Authorization`` its endpoint's split names for it (its
    service's own token, `inferd.platform.service_tokens`) in place of the client's, else
    ``upstream_token`` when given, else the client's own."""

    def __init__(
        self,
        table: EndpointTable,
        endpoint: str | None = None,
        *,
        max_body_size: int = DEFAULT_MAX_BODY,
        max_shadow_inflight: int = 64,
        max_shadow_body: int = 4 * 1024 * 1024,
        shadow_timeout: float = 30.0,
        upstream_token: str | None = None,
        max_idle: int = 64,
        idle_timeout: float = 4.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
    ) -> None:
        self.table, self.endpoint = table, endpoint
        self.max_body_size = max_body_size
        self.max_shadow_inflight, self.max_shadow_body = max_shadow_inflight, max_shadow_body
        self.shadow_timeout = shadow_timeout
        self.authorization = None if upstream_token is None else f"Bearer {upstream_token}".encode()
        self.new_pool = functools.partial(
            Pool,
            max_idle=max_idle,
            idle_timeout=idle_timeout,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )
        self.pools: dict[str, Pool] = {}
        self.shadows: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan to run, no WebSocket to forward
        located = self.locate(scope)
        if located is None:
            await error_response(NotFound(f"no endpoint at {scope['path']}"))(scope, receive, send)
            return
        name, target = located
        picked = self.table.begin(name)
        if picked is None:
            await error_response(NotFound(f"no endpoint named '{name}'"))(scope, receive, send)
            return
        split, upstream, shadow = picked
        if upstream is None:
            if shadow is not None:
                self.table.end(shadow)
            error = Unavailable(f"endpoint '{name}' routes to no service with weight")
            await self.refuse(error, name, scope, receive, send)
            return
        try:
            await self.forward(scope, receive, send, name, target, upstream, shadow, split.tokens)
        finally:
            self.table.end(upstream)

    def locate(self, scope: Scope) -> tuple[str, bytes] | None:
        """The endpoint of a request and the request target to send upstream (path and query)."""
        raw: bytes = scope.get("raw_path") or scope["path"].encode()
        if self.endpoint is not None:
            name, target = self.endpoint, raw
        else:
            path: str = scope["path"]
            if not path.startswith(PREFIX):
                return None
            name = path[len(PREFIX) :].partition("/")[0]
            target = b"/" + raw[len(PREFIX) :].partition(b"/")[2]
        query: bytes = scope.get("query_string", b"")
        return name, target + b"?" + query if query else target

    async def forward(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        name: str,
        target: bytes,
        upstream: str,
        shadow: str | None,
        tokens: Mapping[str, bytes] | None = None,
    ) -> None:
        """Forward one request and its answer; ``shadow`` (counted in flight) gets a copy, or is
        ended here when no copy is sent. ``tokens``: the ``Authorization`` each upstream takes."""
        copy = BodyCopy(shadow)
        try:
            await self.exchange(scope, receive, send, name, target, upstream, copy, tokens or {})
        finally:
            if copy.shadow is not None:  # not handed to a copy's task
                self.table.end(copy.shadow)

    async def exchange(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        name: str,
        target: bytes,
        upstream: str,
        copy: BodyCopy,
        tokens: Mapping[str, bytes],
    ) -> None:
        fields, length = self.request_fields(scope, replaced=bool(tokens) or self.authorization is not None)
        if length is not None and length > self.max_body_size:
            await self.refuse(self.too_large(), name, scope, receive, send)
            return
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if len(body) > self.max_body_size:  # a chunked body can arrive whole in the first message
            await self.refuse(self.too_large(), name, scope, receive, send)
            return
        chunked = more and length is None
        if length is not None or not (body or more):
            framing = b""  # the client's Content-Length is among the fields, or there is no body
        else:
            framing = b"transfer-encoding: chunked\r\n" if chunked else b"content-length: %d\r\n" % len(body)
        start = scope["method"].encode() + b" " + target + b" HTTP/1.1\r\nhost: "
        authorization = self.presented(tokens, upstream)
        pool = self.pools.get(upstream) or self.pool(upstream)
        connection: Connection | None = None
        try:
            connection = await pool.send(
                b"".join((start, upstream.encode(), b"\r\n", fields, authorization, framing, b"\r\n"))
                + (chunk(body) if chunked else body),
                scope["method"] == "HEAD",
            )
            copy.add(body, self.max_shadow_body)
            complete = not more or await self.stream_body(receive, connection, chunked, copy)
            if complete is None:  # the client left
                connection.abort()
                return
            if complete and copy.shadow is not None:
                fields_of_shadow = fields + self.presented(tokens, copy.shadow)
                self.send_shadow(name, start, fields_of_shadow, length is not None, copy)
            status, headers = await connection.head()
        except (UpstreamError, PayloadTooLarge) as error:
            if connection is not None:
                connection.abort()
            await self.refuse(self.upstream_error(name, error), name, scope, receive, send, upstream)
            return
        try:
            await relay(connection, status, headers, send)
        except UpstreamError as error:  # the answer started: all that is left is to cut it short
            logger.warning("endpoint '%s': %s cut its answer short: %s", name, upstream, error)
            connection.abort()
            metrics.count_request(name, upstream, status_of(BadGateway("")).http)
            return
        if complete:
            pool.release(connection)
        else:  # the upstream answered before the whole body was sent: the connection is spent
            connection.abort()
        metrics.count_request(name, upstream, status)

    async def stream_body(
        self, receive: Receive, connection: Connection, chunked: bool, copy: BodyCopy
    ) -> bool | None:
        """Send the rest of the request's body as it arrives; True once all of it was sent, False
        when the upstream answered first, None when the client left."""
        received = copy.size
        more = True
        while more:
            if connection.head_done or connection.error is not None:
                return False
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                return None
            data: bytes = message.get("body", b"")
            more = message.get("more_body", False)
            received += len(data)
            if received > self.max_body_size:
                raise self.too_large()
            copy.add(data, self.max_shadow_body)
            payload = chunk(data) if chunked else data
            if chunked and not more:
                payload += b"0\r\n\r\n"
            if payload:
                connection.write(payload)
                await connection.drain()
        return True

    def presented(self, tokens: Mapping[str, bytes], upstream: str) -> bytes:
        """The ``Authorization`` line ``upstream`` is sent: its own token's, else the gateway's
        ``upstream_token``'s; nothing when there is neither (the client's is among the fields)."""
        authorization = tokens.get(upstream, self.authorization)
        return b"" if authorization is None else b"authorization: %s\r\n" % authorization

    def request_fields(self, scope: Scope, replaced: bool = False) -> tuple[bytes, int | None]:
        """The request's header lines to send upstream (without the client's ``Authorization`` when
        it is ``replaced``), and its Content-Length when that is among them. The options of every
        ``Connection`` header are dropped; when they name Content-Length (or it is no number), the
        client's is not sent and the gateway frames the body itself: a request forwarded without the
        header framing its body would leave the body on the connection, read by the upstream as the
        next request."""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        dropped: AbstractSet[bytes] = DROPPED
        forwarded_for: list[bytes] = []
        host, length, proto = None, None, False
        for name, value in headers:
            if name == b"connection":
                dropped = dropped | set(connection_tokens(value))
            elif name == b"x-forwarded-for":
                if value:
                    forwarded_for.append(value)
            elif name == b"host":
                host = value
            elif name == b"content-length":
                length = int(value) if value.isdigit() else None
                if length is None:
                    dropped = dropped | {b"content-length"}
            elif name == b"x-forwarded-proto":
                proto = True
        if replaced:
            dropped = dropped | {b"authorization"}
        if b"content-length" in dropped:
            length = None
        if proto and b"x-forwarded-proto" in dropped:
            proto = False
        lines = [b"%s: %s\r\n" % (name, value) for name, value in headers if name not in dropped]
        client = scope.get("client")
        if client:
            lines.append(b"x-forwarded-for: %s\r\n" % b", ".join([*forwarded_for, client[0].encode()]))
        if host is not None:
            lines.append(b"x-forwarded-host: %s\r\n" % host)
        if not proto:
            lines.append(b"x-forwarded-proto: %s\r\n" % scope.get("scheme", "http").encode())
        return b"".join(lines), length

    def pool(self, upstream: str) -> Pool:
        pool = self.pools[upstream] = self.new_pool(upstream)
        return pool

    def too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"request body is larger than the limit of {self.max_body_size} bytes")

    def upstream_error(self, name: str, error: Exception) -> InferdError:
        """What the client is told: the endpoint, never the upstream's address (that is logged)."""
        if isinstance(error, InferdError):
            return error
        logger.warning("endpoint '%s': %s", name, error)
        if isinstance(error, UpstreamTimeout):
            return RequestTimeout(f"endpoint '{name}': its service did not answer in time")
        return BadGateway(f"endpoint '{name}': its service is unavailable")

    async def refuse(
        self,
        error: InferdError,
        name: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        upstream: str = "",
    ) -> None:
        response = error_response(error)
        metrics.count_request(name, upstream, response.status_code)
        await response(scope, receive, send)

    # Shadow copies
    def send_shadow(self, name: str, start: bytes, fields: bytes, framed: bool, copy: BodyCopy) -> None:
        """Send ``copy`` of the request to its shadow in the background, unless too many copies are
        in flight or the body was too large to keep (then it is counted as dropped)."""
        shadow = copy.shadow
        assert shadow is not None
        if len(self.shadows) >= self.max_shadow_inflight or copy.parts is None:
            metrics.count_dropped(name)
            return
        framing = b"" if framed or not copy.size else b"content-length: %d\r\n" % copy.size
        data = b"".join((start, shadow.encode(), b"\r\n", fields, framing, b"\r\n", *copy.parts))
        task = asyncio.get_running_loop().create_task(self.shadow_copy(name, shadow, data))
        copy.shadow = None  # its task ends it
        self.shadows.add(task)
        task.add_done_callback(self.shadows.discard)

    async def shadow_copy(self, name: str, shadow: str, data: bytes) -> None:
        pool = self.pools.get(shadow) or self.pool(shadow)
        connection: Connection | None = None
        outcome = "error"
        try:
            connection = await asyncio.wait_for(pool.send(data), self.shadow_timeout)
            status, _ = await asyncio.wait_for(self.read_all(connection), self.shadow_timeout)
            outcome = str(status)
            pool.release(connection)
        except (UpstreamError, asyncio.TimeoutError) as error:
            logger.debug("endpoint '%s': the shadow copy failed: %s", name, error)
            if connection is not None:
                connection.abort()
        finally:
            self.table.end(shadow)
            metrics.count_shadow(name, outcome)

    @staticmethod
    async def read_all(connection: Connection) -> tuple[int, bytes]:
        status, _ = await connection.head()
        more = True
        while more:
            _, more = await connection.body()
        return status, b""

    def close(self) -> None:
        """Close the idle upstream connections and cancel the shadow copies in flight."""
        for pool in self.pools.values():
            pool.close()
        for task in list(self.shadows):
            task.cancel()


class BodyCopy:
    """The parts of a request body kept for its ``shadow`` (None: no copy wanted); ``parts`` becomes
    None once the body outgrows what may be kept."""

    def __init__(self, shadow: str | None) -> None:
        self.shadow = shadow
        self.parts: list[bytes] | None = []
        self.size = 0

    def add(self, data: bytes, limit: int) -> None:
        self.size += len(data)
        if self.shadow is None or self.parts is None:
            return
        if self.size > limit:
            self.parts = None
        else:
            self.parts.append(data)


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body (nothing when empty: an empty chunk ends the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""
