"""The V2 repository extension's load request, as tritonclient sends it: ``parameters.config`` (the
model's settings as a JSON text) and ``parameters["file:<path>"]`` (a file of the model's folder: base64
text over REST, bytes over gRPC), which together replace the model's folder before it is loaded."""

from __future__ import annotations

import binascii
import json
from base64 import b64decode
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inferd.core.errors import InvalidInput

FILE_PREFIX = "file:"


@dataclass(frozen=True)
class LoadRequest:
    config: Mapping[str, Any] | None = None
    files: dict[str, bytes] = field(default_factory=dict)


def load_request(parameters: Mapping[str, Any], files_are_base64: bool) -> LoadRequest:
    """The config and files among a load request's ``parameters`` (others, such as Triton's
    ``unload_dependents``, are not inferd's business and are left alone)."""
    config = parameters.get("config")
    files = {
        key[len(FILE_PREFIX) :]: _content(key, value, files_are_base64)
        for key, value in parameters.items()
        if key.startswith(FILE_PREFIX)
    }
    return LoadRequest(None if config is None else _config(config), files)


def _config(text: Any) -> Mapping[str, Any]:
    if not isinstance(text, str):
        raise InvalidInput(
            "invalid load request: parameters.config must be a JSON text of the model's settings"
        )
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"invalid load request: parameters.config is not JSON: {exc}") from None
    if not isinstance(found, dict):
        raise InvalidInput(
            "invalid load request: parameters.config must be a JSON object of the model's settings"
        )
    return found


def _content(key: str, value: Any, base64: bool) -> bytes:
    if not base64:
        if not isinstance(value, bytes):
            raise InvalidInput(f"invalid load request: parameter '{key}' must be a bytes parameter")
        return value
    if not isinstance(value, str):
        raise InvalidInput(f"invalid load request: parameter '{key}' must be the file's content in base64")
    try:
        return b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"invalid load request: parameter '{key}' is not valid base64") from None
