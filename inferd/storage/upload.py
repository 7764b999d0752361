"""Writing to object storage: a local folder's files put under a storage prefix, each as one object
that appears whole or not at all (one PUT, or a multipart upload completed by one call), so whoever
reads the prefix never sees half a file; or under an http(s) location, each file one PUT
(`inferd.storage.http_upload`). The platform's runs write their answers with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from inferd.storage.backends import Backend, backend_for
from inferd.storage.errors import StorageError, StorageNotFound, shown
from inferd.storage.http_upload import put_files, target, with_slash
from inferd.storage.locations import scheme
from inferd.storage.remote import explained

WRITE = "write"


def check_prefix(prefix: str) -> str:
    """``prefix`` ending with '/' (an http(s) URL: its path), when its scheme is one inferd writes to
    and it names a bucket or host; `StorageError` otherwise. Nothing is sent."""
    if is_http(prefix):
        if not urlsplit(prefix).netloc:
            raise StorageError(prefix, "the URL names no host", WRITE)
        return with_slash(prefix)
    backend_for(prefix, scheme(prefix) or "")
    if not urlsplit(prefix).netloc:
        raise StorageError(prefix, "the URI names no bucket", WRITE)
    return prefix if prefix.endswith("/") else prefix + "/"


def is_http(uri: str) -> bool:
    return scheme(uri) in ("http", "https")


def upload(folder: Path, prefix: str) -> list[str]:
    """Put every file under ``folder`` at ``prefix`` + its path relative to ``folder``; the URIs
    written, in order, as they may be shown (without a query string). A `StorageError` names the
    URI that could not be written (those before it are). The first file goes through the backend's
    quick filesystem, so an unreachable store fails in seconds, not after the library's minutes of
    retries; the others keep the usual retries. Under an http(s) URL each file is PUT at the URL's
    path followed by the file's (`inferd.storage.http_upload.target`)."""
    prefix = check_prefix(prefix)
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    if is_http(prefix):
        return put_files([(file, target(prefix, file.relative_to(folder).as_posix())) for file in files])
    backend = backend_for(prefix, scheme(prefix) or "")
    written: list[str] = []
    filesystem = backend.filesystem(True)
    for file in files:
        uri = prefix + file.relative_to(folder).as_posix()
        _put(backend, filesystem, file, uri)
        if not written:
            filesystem = backend.filesystem(False)
        written.append(shown(uri))
    return written


def put(file: Path, uri: str) -> None:
    """Put one file as the object ``uri`` (quick to fail on an unreachable store, as above; an
    http(s) URL: one PUT)."""
    check_prefix(uri)
    if is_http(uri):
        put_files([(file, uri)])
        return
    backend = backend_for(uri, scheme(uri) or "")
    _put(backend, backend.filesystem(True), file, uri)


def _put(backend: Backend, filesystem: Any, file: Path, uri: str) -> None:
    try:
        with explained(uri, backend, WRITE):
            filesystem.put_file(str(file), uri)
    except StorageNotFound as exc:
        raise StorageNotFound(uri, "no such bucket; create it or check the URI", WRITE) from exc
