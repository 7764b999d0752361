"""Where a service's version runs: its content-addressed bundle unpacked once in the service's own
folder, in a folder named after the deployment, so a model its project does not name serves under
the deployment's name (`inferd serve examples/iris` serves ``iris``; a deployment ``iris`` of that
folder does too, not the service's id)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from inferd.core.errors import Conflict
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.records import Version


async def unpacked_bundle(artifacts: ArtifactStore, own: Path, deployment: str, version: Version) -> Path:
    """The folder ``version``'s bundle is unpacked in under the service's folder ``own`` (fetched
    first, from the artifact store's copy in object storage, when this machine lacks it: in a
    thread). A service unpacked by an inferd before that (its project right in its own folder) keeps
    that folder, so a restart of it serves under the name its clients know."""
    if own.is_dir() and [entry.name for entry in own.iterdir()] not in ([], [deployment]):
        return own
    folder = own / deployment
    if not folder.exists():
        try:
            await asyncio.to_thread(artifacts.unpack, version.digest, folder)
        except (Conflict, OSError):
            if not folder.is_dir():  # else another caller unpacked it meanwhile
                raise
    return folder
