"""V2 infer answered straight from the connection: the one route where the ASGI layers cost the most.

A small inference spends more of its Python in the layers around the endpoint (the HTTP server's
ASGI cycle, Starlette's app and error middleware, the request context, the host and token checks,
the direct-route lookup: each a call and a closure per message) than in decoding, the data plane and
encoding together. `FastInfer` folds what those layers do for ``POST .../infer`` into one call that a
server's connection makes with the request's head and body (`inferd.engines.connections` on uvicorn,
`inferd.engines.granian` on granian), and answers with the status, body and headers to write.

It takes only the requests it answers exactly as the full stack would: tracing off, a fixed
``Content-Length`` within ``max_body_size``, no ``Expect`` or ``Transfer-Encoding``, a ``Host`` the
server answers and, with tokens set, a good ``Authorization``. Anything else (a refusal, a chunked
body, a 100-continue) goes through the app, which answers it as it always did. What the layers do for
the requests it takes, it does too: the request id (echoed, in the log lines' context), the access
line, typed errors through the status table and any other logged once and answered 500; the data
plane counts the metrics and payload logging sees the call as on every route.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import NamedTuple

from starlette.types import Message

from inferd.core import tracing
from inferd.core.context import request_id
from inferd.core.errors import InferdError
from inferd.protocols.asgi import Answer
from inferd.protocols.json import dumps
from inferd.protocols.status import error_body, error_headers, status_of
from inferd.protocols.v2.rest import Infer
from inferd.server.auth import Tokens
from inferd.server.errors import log_unexpected
from inferd.server.middleware import RequestIds, log_access
from inferd.server.origins import HostPolicy

#: The V2 infer routes (`inferd.protocols.v2.rest.routes`), as Starlette matches ``{name}``.
INFER_PATH = re.compile(r"/v2/models/(?P<name>[^/]+)(?:/versions/(?P<version>[^/]+))?/infer")
Headers = Sequence[tuple[bytes, bytes]]


class FastRequest(NamedTuple):
    """A request `FastInfer.take` accepted, with what its answer needs from the head."""

    path: str
    params: dict[str, str]
    headers: Headers
    request_id: str
    length: int


class FastInfer:
    """``POST /v2/models/{name}[/versions/{version}]/infer`` without the ASGI layers; see the module."""

    def __init__(
        self,
        infer: Infer,
        ids: RequestIds,
        max_body_size: int,
        access_log: bool,
        hosts: HostPolicy | None,
        tokens: Tokens | None,
    ) -> None:
        self.infer, self.ids, self.max_body_size, self.access_log = infer, ids, max_body_size, access_log
        self.hosts, self.tokens = hosts, tokens

    def take(self, method: bytes, path: str, headers: Headers) -> FastRequest | None:
        """The request, when this answers it; None sends it through the app."""
        if method != b"POST" or tracing.tracer is not None:
            return None
        found = INFER_PATH.fullmatch(path)
        if found is None:
            return None
        length = host = authorization = rid = None
        for key, value in headers:
            if key == b"content-length":
                length = value
            elif key == b"host":
                host = value
            elif key == b"authorization":
                authorization = value
            elif key == b"x-request-id":
                rid = value.decode("latin-1")
            elif key in (b"expect", b"transfer-encoding"):
                return None
        if length is None or not length.isdigit() or int(length) > self.max_body_size:
            return None
        if self.hosts is not None and host is not None and not self.hosts.allows(host.decode("latin-1")):
            return None
        if self.tokens is not None and self.tokens.refusal(authorization) is not None:
            return None
        params = {key: value for key, value in found.groupdict().items() if value is not None}
        return FastRequest(path, params, headers, rid or self.ids.new(), int(length))

    async def answer(self, request: FastRequest, body: bytes | memoryview) -> Answer:
        """The answer to ``request`` with its whole ``body``; the request id is among its headers."""
        token = request_id.set(request.request_id)
        started = time.perf_counter()
        try:
            status, content, headers = await self._answer(request, body)
            if self.access_log:  # within the request's context: the line has its id
                log_access("POST", request.path, status, started)
        finally:
            request_id.reset(token)
        return Answer(status, content, [*headers, (b"x-request-id", request.request_id.encode())])

    async def _answer(self, request: FastRequest, body: bytes | memoryview) -> Answer:
        async def receive() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        scope = {"type": "http", "path_params": request.params, "headers": request.headers}
        try:
            return await self.infer.answer(scope, receive)
        except InferdError as exc:
            return error_answer(exc)
        except Exception as exc:
            log_unexpected("POST", request.path, exc)
            return error_answer(exc)


def error_answer(exc: BaseException) -> Answer:
    """``exc`` answered as everywhere else (`inferd.server.errors.error_response`)."""
    headers = [(b"content-type", b"application/json")]
    headers += [(name.lower().encode(), value.encode()) for name, value in error_headers(exc).items()]
    return Answer(status_of(exc).http, dumps(error_body(exc)), headers)
