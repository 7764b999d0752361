"""Every multipart and url-encoded form inferd reads, read within the upload limits.

A request with more files than ``max_upload_files`` or a file larger than ``max_upload_size`` is
refused with `PayloadTooLarge` (413); a malformed body is `InvalidInput` (400). The whole body is
already bounded by ``max_body_size`` before a form is parsed, so a refused form never costs more.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.core.settings import DialectSettings

#: Starlette's words when a form has more file parts than allowed.
TOO_MANY_FILES = "Too many files"
SAFE_SUFFIX = re.compile(r"\.[A-Za-z0-9_-]{1,16}")


@dataclass(frozen=True)
class UploadLimits:
    max_files: int = 100
    max_size: int = 64 * 1024 * 1024

    @classmethod
    def of(cls, settings: DialectSettings) -> UploadLimits:
        return cls(settings.max_upload_files, settings.max_upload_size)

    def too_many_files(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"more than {self.max_files} files in one request (max_upload_files)")

    def too_large(self, name: str | None) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"uploaded file '{name or ''}' is larger than the limit of {self.max_size} bytes "
            "(max_upload_size)"
        )


#: The defaults, for callers given no settings (run-local, unit tests).
DEFAULT_UPLOAD_LIMITS = UploadLimits()


async def read_form(request: Request, limits: UploadLimits) -> FormData:
    """``request.form()``, within ``limits``; the caller closes the form."""
    try:
        form = await request.form(max_files=limits.max_files)
    except HTTPException as exc:
        if exc.detail.startswith(TOO_MANY_FILES):
            raise limits.too_many_files() from None
        raise InvalidInput(f"malformed form body: {exc.detail}") from None
    except Exception as exc:  # the multipart parser's own errors, as text
        raise InvalidInput(f"malformed form body: {exc}") from None
    for _, value in form.multi_items():
        if isinstance(value, UploadFile) and (value.size or 0) > limits.max_size:
            await form.close()
            raise limits.too_large(value.filename)
    return form


def safe_file_name(name: str | None) -> str:
    """A client's file name as model code may use it in a path: its last component (after ``/`` or
    ``\\``), without control characters (NUL included), and never ``.`` or ``..``; empty if nothing is
    left. Model code that joins it to a folder stays in that folder."""
    if not name:
        return ""
    base = re.split(r"[/\\]", name)[-1]
    base = "".join(char for char in base if unicodedata.category(char)[0] != "C").strip()
    return "" if base in (".", "..") else base


def safe_suffix(name: str | None) -> str:
    """The extension of a client's file name when it is short and plain (``.png``), else nothing: what
    inferd itself puts in the names of its temporary files."""
    _, dot, extension = safe_file_name(name).rpartition(".")
    suffix = dot + extension
    return suffix if SAFE_SUFFIX.fullmatch(suffix) else ""
