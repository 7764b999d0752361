"""Presigned URLs: ABEJA's CLI uploads a version's archive with a bare ``PUT`` to the ``upload_url`` it
was answered and downloads one with a bare ``GET`` of a ``download_uri``, sending no credentials (they
were S3 URLs). Such a URL carries its own: an expiry time and an HMAC of the method, the path and that
time, keyed by a secret derived from the first configured token, so it works for one method on one
path until it expires, and every URL stops working when that token changes.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote, urlencode

from starlette.requests import Request

#: How long an upload or download URL works.
LIFETIME_SECONDS = 3600


class Presigner:
    def __init__(self, token: str | None) -> None:
        # without tokens nothing is authenticated, and the signature is only checked for its form
        seed = (token or "").encode()
        self._key = hmac.new(seed, b"inferd abeja presigned urls", hashlib.sha256).digest()

    def query(self, method: str, path: str, now: float | None = None) -> str:
        """The query string that makes ``path`` work for ``method`` without other credentials."""
        expires = int((time.time() if now is None else now) + LIFETIME_SECONDS)
        return urlencode({"expires": expires, "signature": self._sign(method, path, expires)})

    def url(self, request: Request, method: str, path: str, now: float | None = None) -> str:
        """``path`` (unquoted, as the server will see it) on the server ``request`` reached, presigned."""
        base = str(request.base_url).rstrip("/")
        return f"{base}{quote(path)}?{self.query(method, path, now)}"

    def valid(self, method: str, path: str, expires: str | None, signature: str | None) -> bool:
        if not expires or not signature or not expires.isdigit() or int(expires) < time.time():
            return False
        return hmac.compare_digest(signature, self._sign(method, path, int(expires)))

    def _sign(self, method: str, path: str, expires: int) -> str:
        message = f"{method.upper()} {path} {expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()
