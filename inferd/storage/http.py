"""``http://`` and ``https://`` through fsspec's HTTP filesystem (aiohttp). A URL is one file: HTTP
has no listing to make a folder of."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
from fsspec.implementations.http import HTTPFileSystem

from inferd.storage.backends import Backend, Explanation, said
from inferd.storage.errors import IncompleteDownload, StorageDenied, StorageNotFound, StorageUnreachable

SETTINGS = "the URL, the network and any proxy (HTTP_PROXY, HTTPS_PROXY)"


def filesystem(quick: bool) -> Any:
    return HTTPFileSystem(skip_instance_cache=True)


def version(info: Mapping[str, Any]) -> str | None:
    """The ETag; without one, Last-Modified and the length (a change that keeps both goes unseen)."""
    if info.get("ETag"):
        return str(info["ETag"])
    parts = [str(info[name]) for name in ("Last-Modified", "size") if info.get(name) is not None]
    return " ".join(parts) or None


def explain_aiohttp(exc: BaseException, settings: str) -> Explanation | None:
    """aiohttp's exceptions, for every backend that speaks HTTP through it."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return (
            StorageUnreachable,
            f"cannot connect to {exc.host}:{exc.port} ({exc.os_error}); check {settings}",
        )
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return (
            IncompleteDownload,
            f"the transfer ended early ({said(exc)}); nothing of it was kept, try again",
        )
    if isinstance(exc, aiohttp.ClientResponseError) and exc.status in (404, 410):
        return StorageNotFound, f"the server answers {exc.status} {exc.message}; check the URL"
    if isinstance(exc, aiohttp.ClientResponseError) and exc.status in (401, 403):
        return StorageDenied, f"the server answers {exc.status} {exc.message}"
    if isinstance(exc, aiohttp.ClientResponseError) and exc.status >= 500:
        return StorageUnreachable, f"the server answers {exc.status} {exc.message}; try again later"
    return None


def explain(exc: BaseException) -> Explanation | None:
    return explain_aiohttp(exc, SETTINGS)


BACKEND = Backend(filesystem, version, explain, SETTINGS, folders=False)
