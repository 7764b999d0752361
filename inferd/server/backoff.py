"""The back-off after wrong tokens, per client: 200 wrong tokens took 1.8 s, nothing slowed a client
trying one after another. Kept apart from `inferd.server.auth` as the one place that remembers
clients (how many, for how long), shared by the bearer check of HTTP, of gRPC and the sign-in form.

A client (an IPv4 address, or an IPv6 address's /64: one host holds a whole /64) may present
``free`` wrong tokens; its count then drains by ``free`` per ``window`` seconds (a leaky bucket).
Past ``free``, each further wrong token is held ``max_wait`` seconds at most, then refused as
`TooManyFailures` (429, ``Retry-After`` saying when the count is back under ``free``; gRPC's
RESOURCE_EXHAUSTED); at most ``max_held`` of a client's answers are held at once, the others refused
at once. A right token is checked first and never slowed nor refused for the client's count: a
process sharing the user's address cannot lock the user out. At most ``max_clients`` clients are
remembered (the least recently failing forgotten first), so addresses cannot grow it without bound.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from collections import OrderedDict
from dataclasses import dataclass

from inferd.core.errors import TooManyFailures

#: Wrong tokens a client may present before it is slowed.
FREE = 10
#: Seconds over which ``FREE`` wrong tokens drain away.
WINDOW = 60.0
#: Longest a slowed answer is held, in seconds.
MAX_WAIT = 1.0
#: A client's answers held at once; more are refused without a wait.
MAX_HELD = 4
#: Clients remembered at once.
MAX_CLIENTS = 4096


@dataclass
class _Client:
    failures: float
    at: float
    held: int = 0


def client_key(address: str | None) -> str:
    """Whom a failure counts against: an IPv4 address, an IPv6 address's /64, else the text as it is
    (a Unix socket's path, or ``""`` when unknown)."""
    if not address:
        return ""
    try:
        parsed = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


class Backoff:
    """The wrong tokens of each client, and what its next wrong one costs."""

    def __init__(
        self,
        free: int = FREE,
        window: float = WINDOW,
        max_wait: float = MAX_WAIT,
        max_held: int = MAX_HELD,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.free, self.rate = free, free / window
        self.max_wait, self.max_held, self.max_clients = max_wait, max_held, max_clients
        self.clients: OrderedDict[str, _Client] = OrderedDict()

    def failed(self, address: str | None, now: float | None = None) -> TooManyFailures | None:
        """Count a wrong token of the client at ``address``; the refusal it has earned, if any (None
        while it is within ``free``)."""
        now = time.monotonic() if now is None else now
        key = client_key(address)
        client = self.clients.pop(key, None)
        if client is None:
            client = _Client(0.0, now)
            while len(self.clients) >= self.max_clients:
                self.clients.popitem(last=False)
        client.failures = max(0.0, client.failures - (now - client.at) * self.rate) + 1
        client.at = now
        self.clients[key] = client  # the most recent last: the first is forgotten first
        over = client.failures - self.free
        if over <= 0:
            return None
        retry_after = max(1, math.ceil(over / self.rate))
        return TooManyFailures(
            f"too many wrong tokens from this client: retry after {retry_after} s", retry_after
        )

    async def hold(self, address: str | None, refused: TooManyFailures) -> None:
        """Wait before answering ``refused`` (at most ``max_wait``; not when the client already has
        ``max_held`` answers waiting)."""
        client = self.clients.get(client_key(address))
        if client is None or client.held >= self.max_held:
            return
        client.held += 1
        try:
            await asyncio.sleep(min(self.max_wait, refused.retry_after))
        finally:
            client.held -= 1
