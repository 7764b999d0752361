"""Bearer-token authentication: one ASGI middleware for every HTTP route and one gRPC interceptor for
every service (`inferd.server.grpc_interceptors.GrpcBearerAuth`, beside the other gRPC interceptor so
an HTTP-only server never imports grpc), both installed only when tokens are configured (no cost
otherwise).

Health and readiness answer without a token so probes need no secret; they run no model code. A
token is compared with every configured one in constant time (`hmac.compare_digest`, no early exit),
so timing tells neither a token's prefix nor which token matched. The ``Authorization`` header is
removed from the request before routing: no dialect hands it to model code, and no log line has it.
A client presenting wrong tokens is slowed, then refused 429 (`inferd.server.backoff`); a missing
token costs nothing, a right one is never slowed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from typing import Protocol

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from inferd.core.errors import TooManyFailures, Unauthenticated
from inferd.core.settings import ServerSettings
from inferd.server.backoff import Backoff
from inferd.server.errors import error_response

MISSING = "missing bearer token: send 'Authorization: Bearer <token>'"
INVALID = "invalid bearer token"
PROBE_METHODS = ("GET", "HEAD")
IsOpen = Callable[[str, str], bool]


class BrowserLogin(Protocol):
    """A second credential for browsers, beside the header (`inferd.server.ui.login.Login`)."""

    def is_open(self, method: str, path: str) -> bool:
        """Whether the path is part of the login itself and needs no credentials."""

    def take_cookie(self, scope: Scope, cookies: list[bytes]) -> tuple[list[bytes], bool]:
        """The ``Cookie`` header values without the login cookie, and whether it was a good one."""

    def page_for(self, scope: Scope) -> Response | None:
        """What a browser refused a page gets instead of the 401 (the login form), if anything."""


class Tokens:
    """The configured tokens, the one check of a presented ``Authorization`` value, and the back-off
    of the clients that present wrong ones."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = [token.encode() for token in tokens]
        if not self._tokens:
            raise ValueError("authentication needs at least one token")
        self.backoff = Backoff()

    def check(
        self, authorization: bytes | str | None, client: str | None
    ) -> Unauthenticated | TooManyFailures | None:
        """`refusal`, with a wrong token counted against ``client`` (its address): past its free
        ones, the `TooManyFailures` to answer instead (after `Backoff.hold`)."""
        refused = self.refusal(authorization)
        if refused is None or refused.message != INVALID:  # no token at all costs nothing
            return refused
        return self.backoff.failed(client) or refused

    def refusal(self, authorization: bytes | str | None) -> Unauthenticated | None:
        """None when ``authorization`` is ``Bearer <a configured token>``, else the error to answer."""
        if authorization is None:
            return Unauthenticated(MISSING)
        if isinstance(authorization, str):
            authorization = authorization.encode("latin-1", "replace")
        scheme, _, given = authorization.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return Unauthenticated(MISSING)
        return None if self.matches(given.strip()) else Unauthenticated(INVALID)

    def matches(self, given: bytes) -> bool:
        """Whether ``given`` is a configured token, compared with each in constant time."""
        matched = False
        for token in self._tokens:  # every token, always: no early exit to time
            matched |= hmac.compare_digest(given, token)
        return matched

    def signatures(self, purpose: bytes) -> list[str]:
        """`signature` of each token for ``purpose``: what stands for a token where it must not be
        stored itself (the try-it page's login cookie)."""
        return [signature(token, purpose) for token in self._tokens]


def signature(token: bytes, purpose: bytes) -> str:
    """HMAC-SHA256 of ``purpose`` keyed by ``token``, in hex."""
    return hmac.new(token, purpose, hashlib.sha256).hexdigest()


def tokens_of(settings: ServerSettings) -> Tokens | None:
    """The configured tokens, or None when the server runs without authentication."""
    if not settings.auth_tokens:
        return None
    return Tokens(token.get_secret_value() for token in settings.auth_tokens)


def open_routes(paths: Iterable[str], patterns: Iterable[re.Pattern[str]] = ()) -> IsOpen:
    """Whether (method, path) is a health or readiness probe: a GET or HEAD of one of ``paths`` or of
    a path ``patterns`` match in full."""
    exact, matchers = frozenset(paths), tuple(patterns)

    def is_open(method: str, path: str) -> bool:
        if method not in PROBE_METHODS:
            return False
        return path in exact or any(pattern.fullmatch(path) for pattern in matchers)

    return is_open


class BearerAuth:
    """Refuses HTTP requests without a known bearer token (401, JSON body, ``WWW-Authenticate:
    Bearer``) except probes; strips ``Authorization`` from every request it lets through. With a
    ``login``, its cookie is a credential too (and is stripped likewise), and a browser asking for a
    page without one is sent to the login form instead of the 401."""

    def __init__(
        self, app: ASGIApp, tokens: Tokens, is_open: IsOpen, login: BrowserLogin | None = None
    ) -> None:
        self.app, self.tokens, self.is_open, self.login = app, tokens, is_open, login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        authorization, kept = None, []
        cookies: list[bytes] = []
        for key, value in scope["headers"]:
            if key == b"authorization":
                authorization = value
            elif key == b"cookie" and self.login is not None:
                cookies.append(value)
            else:
                kept.append((key, value))
        signed_in = False
        if cookies and self.login is not None:  # API clients send no cookie: no cost for them
            others, signed_in = self.login.take_cookie(scope, cookies)
            kept += [(b"cookie", value) for value in others]
        scope = {**scope, "headers": kept}
        method, path = scope.get("method", ""), _route_path(scope)
        if signed_in or self.is_open(method, path) or (self.login and self.login.is_open(method, path)):
            await self.app(scope, receive, send)
            return
        address = client_address(scope)
        refused = self.tokens.check(authorization, address)
        if refused is None:
            await self.app(scope, receive, send)
            return
        if isinstance(refused, TooManyFailures):
            await self.tokens.backoff.hold(address, refused)
            await error_response(refused)(scope, receive, send)
            return
        page = self.login.page_for(scope) if self.login is not None else None
        await (page or error_response(refused))(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path the app routes on: behind a route prefix (Ray Serve's ``root_path``, which ASGI
    servers keep in ``path`` too) a probe is still ``/v2/health/ready``, open without a token."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :] or "/"
    return path


def client_address(scope: Scope) -> str | None:
    """The peer's address of an HTTP request (its host, without the port)."""
    client = scope.get("client")
    return str(client[0]) if client else None
