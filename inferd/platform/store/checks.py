"""Checks of the values a caller gives the store (names, texts, integers, environments, JSON
objects), each raising `InvalidInput` naming what was wrong, and `_checked_changes`, which checks
an ``update_*`` call's keyword changes against the table's allowed ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from inferd.core.errors import InvalidInput
from inferd.core.names import NAME_PATTERN, RULE

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_Changes = Mapping[str, Any]


def _name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(f"{kind} name {name!r} cannot be used in a URL path: use {RULE}")
    return name


def _text(what: str, value: Any, empty: bool = True) -> str:
    if not isinstance(value, str) or "\x00" in value or (not empty and not value):
        raise InvalidInput(f"{what} must be {'a' if empty else 'a non-empty'} string, not {value!r}")
    return value


def _integer(what: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise InvalidInput(f"{what} must be an integer {bounds}, not {value!r}")
    return value


def _optional_integer(what: str, value: Any, low: int, high: int | None = None) -> int | None:
    return None if value is None else _integer(what, value, low, high)


def _environment(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"environment must be a mapping of names to strings, not {value!r}")
    for key, item in value.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise InvalidInput(f"environment variable name {key!r} must be letters, digits and '_'")
        if not isinstance(item, str) or "\x00" in item:
            raise InvalidInput(f"environment variable {key} must be a string, not {item!r}")
    return dict(value)


def _enum(what: str, enum: type[Any], value: Any) -> Any:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(member.value for member in enum)
        raise InvalidInput(f"{what} must be one of {choices}, not {value!r}") from None


def _json_object(what: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{what} must be a mapping, not {type(value).__name__}")
    try:
        loaded: dict[str, Any] = json.loads(json.dumps(dict(value)))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be JSON: {exc}") from None
    return loaded


def _bad(what: str, expected: str, value: Any) -> Any:
    raise InvalidInput(f"{what} must be {expected}, not {value!r}")


def _checked_changes(
    kind: str, allowed: Mapping[str, Callable[[Any], Any]], changes: _Changes
) -> dict[str, Any]:
    unknown = sorted(set(changes) - set(allowed))
    if unknown:
        raise InvalidInput(f"a {kind}'s {', '.join(unknown)} cannot be changed; only {', '.join(allowed)}")
    return {key: allowed[key](value) for key, value in changes.items()}
