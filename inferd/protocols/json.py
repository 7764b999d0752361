"""JSON in and out with orjson, shared by every REST room."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from inferd.core.errors import InvalidInput

_DUMP_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def loads(body: bytes | memoryview | str) -> Any:
    """Parse a JSON body; malformed JSON is the client's error and says where it broke."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"Invalid JSON: {exc}") from None


def dumps(content: Any) -> bytes:
    return orjson.dumps(content, option=_DUMP_OPTIONS)


class JSONResponse(Response):
    """A JSON response rendered by orjson (numpy arrays included)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
