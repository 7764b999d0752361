"""The ABEJA dialect's own settings (besides what every dialect reads)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferd.core.settings import DialectSettings


class AbejaSettings(DialectSettings):
    """How an ABEJA handler is called and the longest video it is given."""

    abeja_style: Literal["auto", "18.10", "19.04"] = "auto"
    """Style of an ABEJA handler: ``18.10`` generators, ``19.04`` request handlers, or ``auto`` to tell
    them apart by the first parameter's name and whether the function is a generator."""

    max_video_seconds: float = Field(3600.0, gt=0)
    """Longest video (by its container's duration, else frames over frame rate) decoded for an ABEJA
    handler; a longer one is refused with 400 before any frame reaches the handler."""
