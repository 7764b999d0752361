"""Cortex's JSON answers: what its Flask server wrote for a predictor's return value, over its REST
routes and (one document per element) over V2."""

from __future__ import annotations

from typing import Any

import orjson

#: Without OPT_SERIALIZE_NUMPY: numpy values go through ``tolist``/``item`` as in Cortex, so a float32
#: is written as the float64 it widens to (0.8999999761581421, not 0.9).
_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


def dumps(value: Any) -> bytes:
    """Cortex's JSON: sorted keys, numpy arrays and scalars as plain JSON, a trailing newline."""
    return orjson.dumps(value, default=_plain, option=_JSON_OPTIONS)


def _plain(value: Any) -> Any:
    """What orjson does not write itself: numpy arrays and scalars, sets and tuples."""
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return getattr(value, method)()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
