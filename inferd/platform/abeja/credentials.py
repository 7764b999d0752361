"""How ABEJA's clients authenticate, made into what the control process checks: ``abejacli`` and the
SDK send HTTP Basic (user id, personal access token) when both are configured, else ``Bearer
PLATFORM_AUTH_TOKEN``. On the ABEJA routes a Basic credential's password is taken as the bearer token
(the user id is not checked: inferd has tokens, not users), and a request to a presigned URL with a
valid signature (`Presigner`) passes as if it carried the first token, and so does a training job's
own token (`JobTokens`) for what that job may do. `BearerAuth` then decides as it
does for every route."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from inferd.platform.abeja.job_tokens import PREFIX, JobTokens
from inferd.platform.abeja.presign import Presigner

JOB_PREFIX = PREFIX.encode()

#: The paths ABEJA's clients call: its API, the data path of its endpoints and its DataLake's files.
ABEJA_PREFIXES = ("/organizations/", "/deployments/", "/channels/")


def is_abeja_path(path: str) -> bool:
    return path.startswith(ABEJA_PREFIXES)


class AbejaCredentials:
    """Installed before `BearerAuth` when tokens are configured; ``token`` is the first of them."""

    def __init__(self, app: ASGIApp, token: str, presigner: Presigner, jobs: JobTokens | None = None) -> None:
        self.app, self.token, self.presigner, self.jobs = app, token.encode(), presigner, jobs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_abeja_path(scope["path"]):
            scope = self._translated(scope)
        await self.app(scope, receive, send)

    def _translated(self, scope: Scope) -> Scope:
        headers = list(scope["headers"])
        for index, (key, value) in enumerate(headers):
            if key == b"authorization":
                token = _basic_password(value)
                if token is None:
                    token = _bearer(value)
                    if token is None or not token.startswith(JOB_PREFIX):
                        return scope
                if token.startswith(JOB_PREFIX) and self.jobs is not None:
                    # a training job's own token: the control process's, for what the job may do
                    allowed = self.jobs.allows(token.decode("latin-1"), scope["method"], scope["path"])
                    token = self.token if allowed else b"-"
                headers[index] = (key, b"Bearer " + token)
                return {**scope, "headers": headers}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        expires, signature = query.get("expires", [None])[0], query.get("signature", [None])[0]
        if self.presigner.valid(scope["method"], scope["path"], expires, signature):
            return {**scope, "headers": [*headers, (b"authorization", b"Bearer " + self.token)]}
        return scope


def _bearer(value: bytes) -> bytes | None:
    scheme, _, token = value.strip().partition(b" ")
    return token.strip() if scheme.lower() == b"bearer" and token.strip() else None


def _basic_password(value: bytes) -> bytes | None:
    scheme, _, encoded = value.strip().partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    _, colon, password = decoded.partition(b":")
    return password if colon and password else None
