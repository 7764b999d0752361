"""``context.datatypes`` of an 18.10 handler: what it may yield besides plain JSON values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Response:
    """A yielded response with its own body and headers: ``Response([jpeg_bytes],
    metadata=[("Content-Type", "image/jpeg")])``. Items are bytes (raw), str (UTF-8) or JSON values."""

    def __init__(self, contents: Iterable[Any], metadata: Iterable[tuple[str, str]] | None = None) -> None:
        self.contents = list(contents)
        self.metadata = list(metadata or [])

    def __repr__(self) -> str:
        return f"Response(contents={len(self.contents)} items, metadata={self.metadata!r})"
