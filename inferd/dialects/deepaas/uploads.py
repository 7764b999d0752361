"""Uploaded files as DEEPaaS models see them: ``UploadedFile(name, filename, content_type,
original_filename)`` where ``filename`` is the path of a temporary copy.

Upstream never deleted those copies; inferd removes them when the request (or training job) is done.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

from starlette.datastructures import UploadFile

COPY_CHUNK = 1024 * 1024


class UploadedFile(NamedTuple):
    name: str
    filename: str
    content_type: str
    original_filename: str


async def save(field: str, upload: UploadFile) -> UploadedFile:
    """Copy ``upload`` to a temporary file the model can open by path."""
    suffix = Path(upload.filename or "").suffix
    handle, path = tempfile.mkstemp(prefix="inferd-upload-", suffix=suffix)
    try:
        with os.fdopen(handle, "wb") as out:
            while chunk := await upload.read(COPY_CHUNK):
                out.write(chunk)
    except BaseException:
        remove([path])
        raise
    return UploadedFile(field, path, upload.content_type or "", upload.filename or "")


def remove(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
