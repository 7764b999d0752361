"""The ``context`` argument: an attribute-and-key object for 18.10 handlers, a dict for 19.04.

18.10 code read ``context.datatypes.Response`` and ``context.exceptions.InvalidInput`` (and training
code ``context.datasets``), so the 18.10 context answers both ``context.x`` and ``context["x"]``.
``http_headers`` are lower-cased and never carry ``Authorization``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qsl

import orjson

from inferd.dialects.abeja import datatypes, exceptions

HIDDEN_HEADERS = frozenset({"authorization"})


class Context(dict[str, Any]):
    """A dict whose keys are also attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


DATATYPES = SimpleNamespace(Response=datatypes.Response)
EXCEPTIONS = SimpleNamespace(InvalidInput=exceptions.InvalidInput, ModelError=exceptions.ModelError)


def legacy_context(method: str, headers: Iterable[tuple[str, str]], query: str) -> Context:
    """The 18.10 context of one request."""
    return Context(
        datatypes=DATATYPES,
        exceptions=EXCEPTIONS,
        http_method=method,
        http_headers={name.lower(): value for name, value in headers if name.lower() not in HIDDEN_HEADERS},
        parameters=dict(parse_qsl(query, keep_blank_values=True)),
    )


def runtime_context() -> dict[str, Any]:
    """The 19.04 context: the JSON of ``CONTEXT`` (read once at load), ``{}`` by default."""
    raw = os.environ.get("CONTEXT")
    if not raw:
        return {}
    value = orjson.loads(raw)
    return value if isinstance(value, dict) else {}
