"""``context.exceptions`` of an 18.10 handler: raising them picks the status of the answer."""

from __future__ import annotations


class InvalidInput(Exception):
    """The request was wrong: 400 ``{"error": "bad_request", "error_description": <message>}``."""


class ModelError(Exception):
    """The model failed: 500 ``{"error": "internal_server_error", "error_description": <message>}``."""
