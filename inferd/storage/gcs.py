"""``gs://`` (and ``gcs://``) through gcsfs: Google's credential chain by default, the emulator named
by ``STORAGE_EMULATOR_HOST``, and anonymous access with fsspec's ``FSSPEC_GCS_TOKEN=anon``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gcsfs
from google.auth.exceptions import DefaultCredentialsError

from inferd.storage.backends import Backend, Explanation
from inferd.storage.errors import StorageDenied
from inferd.storage.http import explain_aiohttp

SETTINGS = "GOOGLE_APPLICATION_CREDENTIALS (or FSSPEC_GCS_TOKEN=anon), STORAGE_EMULATOR_HOST and the network"


def filesystem(quick: bool) -> Any:
    # gcsfs's retries are fixed when its class is defined; the caller's deadline bounds the first request
    return gcsfs.GCSFileSystem(skip_instance_cache=True)


def version(info: Mapping[str, Any]) -> str | None:
    """The generation and the MD5 (composite objects have none)."""
    parts = [str(info.get(name) or "") for name in ("generation", "md5Hash")]
    return ":".join(part for part in parts if part) or None


def explain(exc: BaseException) -> Explanation | None:
    if isinstance(exc, DefaultCredentialsError):
        return StorageDenied, f"no Google credentials found ({exc}); set {SETTINGS}"
    return explain_aiohttp(exc, SETTINGS)


BACKEND = Backend(filesystem, version, explain, SETTINGS)
