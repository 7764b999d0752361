"""Uploaded files as DEEPaaS models see them: ``UploadedFile(name, filename, content_type,
original_filename)`` where ``filename`` is the path of a temporary copy, of the class the model
imports (`stand_in.uploaded_file_type`: deepaas's own when it is installed).

Upstream never deleted those copies; inferd removes them when the request (or training job) is done.
The client's file name only lends its plain extension to the copy's name, and ``original_filename``
is its last path component without control characters (`safe_file_name`), so model code joining it
to a folder cannot leave that folder.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

from starlette.datastructures import UploadFile

from inferd.dialects.deepaas.stand_in import uploaded_file
from inferd.protocols.forms import safe_file_name, safe_suffix

COPY_CHUNK = 1024 * 1024


async def save(field: str, upload: UploadFile) -> Any:
    """Copy ``upload`` to a temporary file the model can open by path."""
    handle, path = tempfile.mkstemp(prefix="inferd-upload-", suffix=safe_suffix(upload.filename))
    try:
        with os.fdopen(handle, "wb") as out:
            while chunk := await upload.read(COPY_CHUNK):
                out.write(chunk)
    except BaseException:
        remove([path])
        raise
    return uploaded_file(field, path, upload.content_type or "", safe_file_name(upload.filename))


def remove(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
