"""Each service's own bearer token, so that no service holds the control process's.

A service runs code its version brings, and that code can read its process's environment; had it the
control process's admin token (as it did in ``INFERD_AUTH_TOKENS``), it could call the control API,
which runs code by design. So each service gets a token of its own in ``INFERD_AUTH_TOKENS``, and
everything of the control process that calls a service (the gateway's HTTP and gRPC sides, the
ABEJA-compatible API's forwarding, the console's and ``inferd get``'s metrics) presents that token,
after checking the client's own against the control process's tokens.

A service's token is HMAC-SHA256 of its id keyed by a random secret the control process keeps in
``DATA_DIR/platform/service-tokens.key`` (0600, made once): nothing to store per service, the same
token after a restart of the control process (which adopts the running services), and one service's
token tells nothing about another's. With HAProxy as the data path, which sets one header per backend
before it picks a server, every service also takes the data path's token (the same HMAC of
``haproxy``): it still cannot reach the control API, but it can call the other services.

Runs get a random token of their own each (`new_token`): their process never sees the admin one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

#: The variable ``inferd serve`` reads its tokens from.
TOKENS_VARIABLE = "INFERD_AUTH_TOKENS"
_KEY_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(32)


class ServiceTokens:
    """The services' tokens of one control process (``folder``: its platform folder). ``shared``:
    the data path presents one token to every service (HAProxy)."""

    def __init__(self, folder: Path, shared: bool = False) -> None:
        self._key = _key(folder / "service-tokens.key")
        self.shared = self._derive("data path haproxy") if shared else None

    def of(self, service_id: str) -> str:
        """The token service ``service_id`` (each of its replicas) takes."""
        return self._derive(f"service {service_id}")

    def environment(self, service_id: str) -> dict[str, str]:
        """What a service's processes get: its tokens in ``INFERD_AUTH_TOKENS``, in place of the
        control process's."""
        tokens = [self.of(service_id), *([self.shared] if self.shared else [])]
        return {TOKENS_VARIABLE: ",".join(tokens)}

    def _derive(self, purpose: str) -> str:
        return hmac.new(self._key, purpose.encode(), hashlib.sha256).hexdigest()


def _key(path: Path) -> bytes:
    """The secret in ``path``, made (0600, without a moment readable by others) when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) >= _KEY_BYTES:
            return key
        path.unlink()  # a key cut short (a crash while writing it): services restart with new ones
        return _key(path)
    with os.fdopen(descriptor, "wb") as file:
        key = secrets.token_bytes(_KEY_BYTES)
        file.write(key)
        file.flush()
        os.fsync(file.fileno())
    return key
