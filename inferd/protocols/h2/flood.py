"""What one HTTP/2 peer may make us do for nothing: frames that cost the server work (an answer to
write, a stream to start and tear down, a frame to parse) and carry no request, counted against a
budget per connection.

The classes of attack are HTTP/2's known ones: the ping and settings floods (CVE-2019-9512,
CVE-2019-9515: every PING and SETTINGS is answered, so a peer that sends them and never reads fills
the server's write buffer), the reset floods (CVE-2019-9514, and "rapid reset", CVE-2023-44487: a
stream opened and at once reset starts a call for nothing, and RST_STREAM needs no answer so nothing
slows it), the empty-frame flood (CVE-2019-9518: DATA or HEADERS without payload or end) and the
priority shuffle (CVE-2019-9513). Each such frame takes one token of a bucket that holds ``limit``
tokens and refills at ``limit`` a second: a client may send that many at once and that many a
second for as long as it likes, which no gRPC client comes near (grpcio sends a keepalive PING at
most every few seconds, a cancelled call is one RST_STREAM). Past it the connection ends with GOAWAY
ENHANCE_YOUR_CALM, as grpcio's and Go's servers end such connections.
"""

from __future__ import annotations

import time


class FloodBudget:
    """A token bucket of ``limit`` tokens refilled at ``limit`` a second."""

    __slots__ = ("limit", "stamp", "tokens")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.tokens = float(limit)
        self.stamp = time.monotonic()

    def spend(self) -> bool:
        """Take one token; False when the bucket is empty (the peer floods)."""
        now = time.monotonic()
        self.tokens = min(float(self.limit), self.tokens + (now - self.stamp) * self.limit)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
