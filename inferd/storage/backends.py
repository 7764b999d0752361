"""The remote storage services inferd reads, as modules imported when a URI of their scheme is first
fetched: each backend's library is an optional extra, so it is imported only when used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from inferd.core.errors import MissingExtra
from inferd.storage.errors import StorageError, StorageExtraMissing

#: What a backend says about an exception of its library: the error class and the problem to report,
#: or None when it does not know the exception.
Explanation = tuple[type[StorageError], str]


@dataclass(frozen=True)
class Backend:
    """What inferd needs of one storage service, on top of its fsspec filesystem."""

    #: A new filesystem (never fsspec's cached instance, which would keep an endpoint, credentials
    #: and listings of before); ``quick`` asks for one that gives up on an unreachable store within
    #: seconds, for the first request, instead of the library's minutes of retries.
    filesystem: Callable[[bool], Any]
    #: The version of one object from its fsspec info (ETag, generation...), None if it has none.
    version: Callable[[Mapping[str, Any]], str | None]
    #: Library-specific exceptions (no credentials, connection refused) in inferd's terms.
    explain: Callable[[BaseException], Explanation | None]
    #: Where the store's endpoint and credentials are configured, for the messages that need it.
    settings: str
    #: Whether a URI may name a folder (a prefix); HTTP serves single files.
    folders: bool = True


#: scheme → the inferd extra that installs its library, which is also the name of the module here
#: holding its `BACKEND` (inferd.storage.<extra>), imported when the scheme is first fetched
BACKENDS: dict[str, str] = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}


def said(exc: BaseException) -> str:
    """The first line of what ``exc`` says: a store's whole error page may follow it."""
    return next(iter(str(exc).splitlines()), type(exc).__name__)


def backend_for(uri: str, scheme: str) -> Backend:
    """The backend of ``scheme``, importing its library now; a clear error if it is unknown or its
    extra is not installed."""
    if scheme not in BACKENDS:
        known = ", ".join(f"{name}://" for name in BACKENDS)
        raise StorageError(uri, f"unknown scheme '{scheme}://'; inferd reads local paths, file://, {known}")
    extra = BACKENDS[scheme]
    try:
        backend: Backend = importlib.import_module(f"inferd.storage.{extra}").BACKEND
    except ImportError as exc:
        raise StorageExtraMissing(
            uri, f"{scheme}:// needs inferd's {extra} extra: {MissingExtra.install(extra)} ({exc})", extra
        ) from exc
    return backend
