"""A version whose target is a storage URI (a KServe InferenceService's ``storageUri``: the service's
``inferd serve`` fetches it when it starts) is looked at before a service of it is created or started,
so that a URI the store has not got, refuses or cannot be reached is the API's 404, 403 or 502 naming
it, rather than a service that starts, fails five times and is ``failed`` a minute later.

The look is one listing with the control process's credentials and ``AWS_ENDPOINT_URL``, which the
services inherit; a version or service that brings credentials or an endpoint of its own (any
variable below in its environment) is not looked at: its own server says what it finds."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from inferd.storage.locations import is_remote, scheme
from inferd.storage.remote import Remote

#: Variables that point a service's fetches elsewhere than the control process's own would go.
OWN_STORAGE_SETTINGS = (
    "AWS_",
    "GOOGLE_",
    "GCSFS_",
    "FSSPEC_",
    "STORAGE_EMULATOR_HOST",
    "HTTP_PROXY",
    "HTTPS_PROXY",
)
#: Seconds the store has to answer the look (as a run's fetches).
CHECK_SECONDS = 10.0


async def check_model_source(target: str, environment: Mapping[str, str]) -> None:
    """Raise the `StorageError` a fetch of ``target`` would (in a thread) when it is a storage URI
    the control process can check; nothing for a path in the bundle."""
    if not is_remote(target) or any(name.upper().startswith(OWN_STORAGE_SETTINGS) for name in environment):
        return
    remote = Remote(target, scheme(target) or "", CHECK_SECONDS)
    await asyncio.to_thread(remote.listing)
