"""Where a request comes from: the ``Origin`` check of control routes and the ``Host`` check of a
loopback server, the two defences against other web pages a browser visits.

A page on any site may make its visitor's browser POST a form or ``text/plain`` to any address, the
server's included, without asking first (a "simple" request: CORS only hides the answer). Control
routes (`inferd.protocols.control`) change the server's state, so their unsafe methods refuse a
request whose ``Origin`` is neither the server's own (its scheme and the ``Host`` it was asked
under) nor listed in ``allowed_origins``. Requests without ``Origin`` are not from a page (curl,
SDKs) and pass, as do inference routes, which keep each platform's CORS behaviour.

DNS rebinding goes further: a page on an attacker's name that resolves to 127.0.0.1 is same-origin
with the server as far as the browser knows, and may read any answer. Its requests carry the
attacker's name in ``Host``, so a server bound to loopback answers only loopback names and
``allowed_hosts`` (every route: inference answers can be read too, as Django and Jupyter check).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from inferd.core.errors import Forbidden
from inferd.core.hosts import is_loopback
from inferd.core.settings import ServerSettings
from inferd.protocols.asgi import header
from inferd.protocols.control import SAFE_METHODS, ControlRoute
from inferd.server.errors import error_response

DEFAULT_PORTS = {"http": 80, "https": 443}
#: (scheme, host, port), the parts two origins must share.
Origin = tuple[str, str, int]


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as an `Origin` (default port filled in), or None when it is not one
    (``null``, another scheme, a path)."""
    try:
        parts = urlsplit(text.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/") or parts.query:
        return None
    return scheme, host.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(scope: Scope) -> Origin | None:
    """The origin the request was sent to: its scheme and its ``Host`` header."""
    host = header(scope, b"host")
    return None if host is None else parse_origin(f"{scope.get('scheme', 'http')}://{host}")


class OriginPolicy:
    """Which origins may use a control route's unsafe methods: the server's own and ``allowed``."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        allowed = list(allowed)
        self.any = "*" in allowed
        self.allowed = {parsed for text in allowed if (parsed := parse_origin(text)) is not None}

    def refusal(self, scope: Scope) -> Forbidden | None:
        """None when the request may go on, else the error to answer."""
        if scope["method"] in SAFE_METHODS or self.any:
            return None
        origin = header(scope, b"origin")
        if origin is None:
            return None
        parsed = parse_origin(origin)
        if parsed is not None and (parsed in self.allowed or parsed == own_origin(scope)):
            return None
        return Forbidden(
            f"cross-origin request refused: origin {origin!r} is not this server's own; "
            "list it in INFERD_ALLOWED_ORIGINS to allow it"
        )


class OriginGuard:
    """A control route's app behind the `OriginPolicy` check."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.policy.refusal(scope)
        if refused is not None:
            await error_response(refused)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def guard_control_routes(routes: Iterable[BaseRoute], policy: OriginPolicy) -> None:
    """Put every `ControlRoute` of ``routes`` behind ``policy`` (once, when the app is built)."""
    for route in routes:
        if isinstance(route, ControlRoute):
            route.app = OriginGuard(route.app, policy)


#: How many ``Host`` values a `HostPolicy` remembers its answer for.
SEEN_HOSTS = 256


class HostPolicy:
    """The ``Host`` names a server answers: loopback ones, and ``allowed`` (``*`` for any,
    ``.example.com`` for that name and its subdomains)."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        names = [name.strip().lower().removesuffix(".") for name in allowed]
        self.any = "*" in names
        self.exact = frozenset(name for name in names if not name.startswith("."))
        self.suffixes = tuple(name for name in names if name.startswith("."))
        #: Answers by ``Host`` value: clients send the same few, and parsing one costs several
        #: microseconds per request. Emptied when full, so odd names cannot grow it without bound.
        self.seen: dict[str, bool] = {}

    def allows(self, host: str) -> bool:
        """Whether a ``Host`` header value (a name or address, maybe with a port) is answered."""
        if self.any:
            return True
        answer = self.seen.get(host)
        if answer is None:
            if len(self.seen) >= SEEN_HOSTS:
                self.seen.clear()
            answer = self.seen[host] = self._allows(host)
        return answer

    def _allows(self, host: str) -> bool:
        try:
            name = urlsplit(f"//{host}").hostname
        except ValueError:
            return False
        if not name:
            return False
        name = name.removesuffix(".")
        return (
            is_loopback(name)
            or name in self.exact
            or any(name.endswith(suffix) or name == suffix[1:] for suffix in self.suffixes)
        )


def host_policy(settings: ServerSettings) -> HostPolicy | None:
    """The ``Host`` check of a server bound to loopback, or of any when ``allowed_hosts`` is set; None
    when neither (a server bound to another interface answers whatever name it is reached by)."""
    if is_loopback(settings.host) or settings.allowed_hosts:
        return HostPolicy(settings.allowed_hosts)
    return None


class HostCheck:
    """Refuses HTTP requests whose ``Host`` the `HostPolicy` does not answer (403, JSON body); a request
    without ``Host`` (HTTP/1.0) passes, as no browser sends one."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = header(scope, b"host")
            if host is not None and not self.policy.allows(host):
                refused = Forbidden(
                    f"host {host!r} is not a name this server answers (loopback names and "
                    "INFERD_ALLOWED_HOSTS): list it in INFERD_ALLOWED_HOSTS to allow it"
                )
                await error_response(refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)
