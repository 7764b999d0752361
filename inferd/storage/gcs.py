"""``gs://`` (and ``gcs://``) through gcsfs: Google's credential chain by default, the emulator named
by ``STORAGE_EMULATOR_HOST``, and anonymous access with fsspec's ``FSSPEC_GCS_TOKEN=anon``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gcsfs
from gcsfs.core import GCSFileSystem as JsonApiFileSystem
from gcsfs.retry import HttpError
from google.auth.exceptions import DefaultCredentialsError

from inferd.storage.backends import Backend, Explanation, said
from inferd.storage.errors import StorageDenied
from inferd.storage.http import explain_aiohttp

SETTINGS = "GOOGLE_APPLICATION_CREDENTIALS (or FSSPEC_GCS_TOKEN=anon), STORAGE_EMULATOR_HOST and the network"


def filesystem(quick: bool) -> Any:
    # gcsfs's retries are fixed when its class is defined; the caller's deadline bounds the first request.
    # An emulator serves the JSON API alone: gcsfs's default class also asks Google's Storage Control
    # gRPC API about the bucket, which an emulator leaves unanswered until gcsfs's minute-long deadline.
    kind = JsonApiFileSystem if os.environ.get("STORAGE_EMULATOR_HOST") else gcsfs.GCSFileSystem
    return kind(skip_instance_cache=True)


def version(info: Mapping[str, Any]) -> str | None:
    """The generation and the MD5 (composite objects have none)."""
    parts = [str(info.get(name) or "") for name in ("generation", "md5Hash")]
    return ":".join(part for part in parts if part) or None


def explain(exc: BaseException) -> Explanation | None:
    if isinstance(exc, DefaultCredentialsError):
        return StorageDenied, f"no Google credentials found ({said(exc)}); set {SETTINGS}"
    # gcsfs falls back to anonymous access when it finds no credentials, so a private bucket answers
    # 401 (an HttpError) or 403 (which gcsfs raises as a bare OSError "Forbidden: ...")
    refused = isinstance(exc, HttpError) and exc.code in (401, 403)
    if refused or (type(exc) is OSError and str(exc).startswith("Forbidden")):
        return StorageDenied, f"access refused ({said(exc)}); check {SETTINGS}"
    return explain_aiohttp(exc, SETTINGS)


BACKEND = Backend(filesystem, version, explain, SETTINGS)
