"""Writing to an http(s) location: each file one PUT at ``{base}/{relative path}``, the way WebDAV
servers and upload URLs of object stores take files. The base's query string (a token, a signature)
is sent with every PUT and shown nowhere (`inferd.storage.errors.shown`).

A PUT carries the file's length, not a chunked body (pre-signed URLs of S3 and GCS refuse those),
and redirects are not followed (a PUT's body is not sent twice). What the server answers says the
error: 404 or 410 the location is missing, 401 or 403 refused, 5xx or no answer unreachable."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from inferd.storage.errors import (
    StorageDenied,
    StorageError,
    StorageNotFound,
    StorageUnreachable,
    shown,
)

WRITE = "write"
#: Seconds to connect (an unreachable server fails the upload within them) and to wait for an answer.
CONNECT_SECONDS = 5.0
ANSWER_SECONDS = 60.0


def with_slash(base: str) -> str:
    """``base`` with its path ending in '/' (its query string kept after it)."""
    parts = urlsplit(base)
    if parts.path.endswith("/"):
        return base
    return urlunsplit(parts._replace(path=parts.path + "/"))


def target(base: str, relative: str) -> str:
    """Where the file at ``relative`` (a POSIX path under the folder uploaded) is PUT: its path after
    the base's, each part quoted, the base's query string kept."""
    parts = urlsplit(with_slash(base))
    return urlunsplit(parts._replace(path=parts.path + quote(relative)))


def put_files(files: list[tuple[Path, str]]) -> list[str]:
    """PUT each (file, URL), in order; the URLs written, as they may be shown. A `StorageError`
    names the URL that failed (those before it are written)."""
    written = []
    timeout = httpx.Timeout(ANSWER_SECONDS, connect=CONNECT_SECONDS)
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        for file, url in files:
            _put(client, file, url)
            written.append(shown(url))
    return written


def _put(client: httpx.Client, file: Path, url: str) -> None:
    try:
        with open(file, "rb") as body:
            answer = client.put(url, content=body)
    except httpx.TimeoutException as exc:
        raise StorageUnreachable(url, f"no answer in time ({type(exc).__name__})", WRITE) from exc
    except httpx.TransportError as exc:
        raise StorageUnreachable(url, f"cannot connect ({type(exc).__name__}: {exc})", WRITE) from exc
    status = answer.status_code
    if status < 300:
        return
    said = f"the server answers {status} {answer.reason_phrase}"
    if status in (404, 410):
        raise StorageNotFound(url, f"{said}; check the URL", WRITE)
    if status in (401, 403):
        raise StorageDenied(url, said, WRITE)
    if status >= 500:
        raise StorageUnreachable(url, f"{said}; try again later", WRITE)
    raise StorageError(url, said, WRITE)
