"""Writing to object storage: a local folder's files put under a storage prefix, each as one object
that appears whole or not at all (one PUT, or a multipart upload completed by one call), so whoever
reads the prefix never sees half a file. The platform's runs write their answers with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from inferd.storage.backends import Backend, backend_for
from inferd.storage.errors import StorageError, StorageNotFound
from inferd.storage.locations import scheme
from inferd.storage.remote import explained

WRITE = "write"


def check_prefix(prefix: str) -> str:
    """``prefix`` ending with '/', when its scheme is one inferd writes to (a store of folders, with
    a bucket named); `StorageError` otherwise. Its library is imported, nothing is sent."""
    backend = backend_for(prefix, scheme(prefix) or "")
    if not backend.folders:
        raise StorageError(prefix, "an http(s) server takes no uploads; use s3:// or gs://", WRITE)
    if not urlsplit(prefix).netloc:
        raise StorageError(prefix, "the URI names no bucket", WRITE)
    return prefix if prefix.endswith("/") else prefix + "/"


def upload(folder: Path, prefix: str) -> list[str]:
    """Put every file under ``folder`` at ``prefix`` + its path relative to ``folder``; the URIs
    written, in order. A `StorageError` names the URI that could not be written (those before it
    are). The first file goes through the backend's quick filesystem, so an unreachable store fails
    in seconds, not after the library's minutes of retries; the others keep the usual retries."""
    prefix = check_prefix(prefix)
    backend = backend_for(prefix, scheme(prefix) or "")
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    written: list[str] = []
    filesystem = backend.filesystem(True)
    for file in files:
        target = prefix + file.relative_to(folder).as_posix()
        _put(backend, filesystem, file, target)
        if not written:
            filesystem = backend.filesystem(False)
        written.append(target)
    return written


def put(file: Path, uri: str) -> None:
    """Put one file as the object ``uri`` (quick to fail on an unreachable store, as above)."""
    check_prefix(uri)
    backend = backend_for(uri, scheme(uri) or "")
    _put(backend, backend.filesystem(True), file, uri)


def _put(backend: Backend, filesystem: Any, file: Path, uri: str) -> None:
    try:
        with explained(uri, backend, WRITE):
            filesystem.put_file(str(file), uri)
    except StorageNotFound as exc:
        raise StorageNotFound(uri, "no such bucket; create it or check the URI", WRITE) from exc
