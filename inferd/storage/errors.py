"""Why a model could not be fetched. Each error names the URI, since a server may fetch many, and is
a `ModelLoadError`: the project is well formed but its model cannot be had, so start-up exits 1 (as
for a model that fails to load), not 2 (a target that makes no sense); but a scheme whose library is
not installed is `StorageExtraMissing`, a `MissingExtra` like every other (exit 2).

Each kind is also the core error that gives its status (`inferd.protocols.status`): a missing object
404, no or refused credentials 403, a store that does not answer, answers 5xx or breaks off 502; any
other (an unknown scheme, a URI without a bucket) stays 400. The URI is shown without what may be a
secret: a user's password and the query string (a pre-signed URL's signature)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from inferd.core.errors import (
    MissingExtra,
    ModelLoadError,
    StorageAccessDenied,
    StorageUnavailable,
    StoredObjectMissing,
)

#: What stands for a query string or a password left out of a message.
HIDDEN = "..."
#: Shorter ones are not looked for in a library's text (they would match ordinary words).
_SECRET_MIN = 4


def shown(uri: str) -> str:
    """``uri`` as messages and logs may show it: without a password and without the query string
    and fragment (``https://host/out/a.json?X-Amz-Signature=...`` → ``https://host/out/a.json``)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    if not parts.scheme or not (parts.query or parts.fragment or parts.password is not None):
        return uri
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:{HIDDEN}@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _scrubbed(problem: str, uri: str) -> str:
    """``problem`` without ``uri``'s query string or password, should a library have quoted them."""
    parts = urlsplit(uri) if "://" in uri else None
    for secret in (parts.query, parts.password) if parts is not None else ():
        if secret and len(secret) >= _SECRET_MIN:
            problem = problem.replace(secret, HIDDEN)
    return problem


class StorageError(ModelLoadError):
    """A URI could not be fetched (or written: ``action``); the message names it, says what went wrong
    and what to do."""

    def __init__(self, uri: str, problem: str, action: str = "fetch") -> None:
        problem = _scrubbed(problem, uri)
        super().__init__(f"cannot {action} {shown(uri)}: {problem}")
        self.uri, self.problem = uri, problem


class StorageExtraMissing(StorageError, MissingExtra):
    """The scheme's library is not installed: its extra is (``pip install 'inferd[s3]'``). Not a
    failed fetch but the user's environment: start-up exits 2 like any missing extra."""

    def __init__(self, uri: str, problem: str, extra: str) -> None:
        StorageError.__init__(self, uri, problem)
        self.extra = extra


class StorageNotFound(StorageError, StoredObjectMissing):
    """No such file, object or prefix (or a prefix with no objects under it)."""


class StorageDenied(StorageError, StorageAccessDenied):
    """No credentials were found, or the store refused the ones given."""


class StorageUnreachable(StorageError, StorageUnavailable):
    """The store did not answer: connection refused, unknown host, or no answer in time; or it
    answered with a server error (5xx)."""


class IncompleteDownload(StorageError, StorageUnavailable):
    """A transfer ended early (a truncated response): nothing of it is kept."""
