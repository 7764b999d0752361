"""Per-request context carried across awaits, so log lines name the request they belong to."""

from __future__ import annotations

from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("inferd_request_id", default=None)
