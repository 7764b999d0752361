"""Seldon's parameter list, ``[{"name", "value", "type"}]`` with types INT, FLOAT, DOUBLE, STRING and
BOOL: how ``PREDICTIVE_UNIT_PARAMETERS`` and a graph unit's ``parameters`` give a component's
constructor its keyword arguments (spec §1)."""

from __future__ import annotations

from typing import Any

import orjson

from inferd.core.errors import TargetError

PARAMETER_TYPES = {"INT": int, "FLOAT": float, "DOUBLE": float, "STRING": str, "BOOL": None}


def parse_parameters(text: str | None) -> dict[str, Any]:
    """``[{"name", "value", "type"}]`` → keyword arguments; a bad list, type or value is a TargetError."""
    if not text:
        return {}
    try:
        declared = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise TargetError(f"MICROSERVICE_BAD_PARAMETER: parameters are not JSON: {exc}") from None
    if not isinstance(declared, list):
        raise TargetError("MICROSERVICE_BAD_PARAMETER: parameters must be a JSON list")
    parameters: dict[str, Any] = {}
    for item in declared:
        if not isinstance(item, dict) or not {"name", "value", "type"} <= item.keys():
            raise TargetError(f"MICROSERVICE_BAD_PARAMETER: {item!r} needs name, value and type")
        kind = str(item["type"]).upper()
        if kind not in PARAMETER_TYPES:
            raise TargetError(
                f"MICROSERVICE_BAD_PARAMETER: {item['name']} has unknown type {item['type']!r}; "
                f"expected one of {sorted(PARAMETER_TYPES)}"
            )
        parameters[item["name"]] = _convert(item["name"], item["value"], kind)
    return parameters


def _convert(name: str, value: Any, kind: str) -> Any:
    text = str(value)
    try:
        if kind == "BOOL":
            return _strtobool(text)
        convert = PARAMETER_TYPES[kind]
        assert convert is not None
        return convert(text)
    except ValueError:
        raise TargetError(f"MICROSERVICE_BAD_PARAMETER: {name}={text!r} is not a valid {kind}") from None


def _strtobool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("y", "yes", "t", "true", "on", "1"):
        return True
    if lowered in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(text)
