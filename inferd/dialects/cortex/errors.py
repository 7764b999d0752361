"""Cortex's user-facing error: message parts joined by ``": "`` behind ``error: ``, as clients saw them."""

from __future__ import annotations


class CortexError(Exception):
    def __init__(self, *parts: str) -> None:
        super().__init__(*parts)
        self.parts = list(parts)

    def wrap(self, *outer: str) -> CortexError:
        """The same error with ``outer`` parts in front (Cortex's ``e.wrap``)."""
        self.parts[:0] = outer
        return self

    def __str__(self) -> str:
        return "error: " + ": ".join(self.parts)
