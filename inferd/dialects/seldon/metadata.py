"""Model metadata as Seldon serves it on ``/metadata`` (spec §8): ``init_metadata()`` merged with the
``MODEL_METADATA`` variable (YAML or JSON; the variable wins per key) over defaults from the image
name, then validated once. Invalid metadata makes every metadata call a 500, and nothing else."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from inferd.dialects.seldon.unit import split_image
from inferd.protocols.seldon.errors import BAD_METADATA, SeldonError

logger = logging.getLogger("inferd.seldon")

UNAVAILABLE = SeldonError("Model metadata unavailable", 500, BAD_METADATA)
TENSOR_TYPES = ("tensor", "ndarray", "tftensor")
V2_DATATYPES = frozenset(
    "BOOL UINT8 UINT16 UINT32 UINT64 INT8 INT16 INT32 INT64 FP16 FP32 FP64 BYTES".split()
)
KEYS = frozenset({"name", "versions", "platform", "inputs", "outputs", "custom"})


def defaults(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    image = environ.get("PREDICTIVE_UNIT_IMAGE")
    name, version = ("", "") if image is None else split_image(image)
    return {"name": name, "versions": [version], "platform": "", "inputs": [], "outputs": [], "custom": {}}


def build(init_metadata: Callable[[], Any] | None, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The validated metadata document, or `UNAVAILABLE` raised (and logged) when it is invalid."""
    document = defaults(environ)
    try:
        if init_metadata is not None:
            from_code = init_metadata()
            if isinstance(from_code, dict):
                document.update(from_code)
        if environ.get("MODEL_METADATA"):
            from_env = yaml.safe_load(environ["MODEL_METADATA"])
            if not isinstance(from_env, dict):
                raise ValueError("MODEL_METADATA is not a mapping")
            document.update(from_env)
        problem = _problem(document)
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if problem:
        logger.error("model metadata is invalid, /metadata answers 500: %s", problem)
        raise UNAVAILABLE
    return document


def _problem(document: dict[str, Any]) -> str | None:
    unknown = document.keys() - KEYS
    if unknown:
        return f"unknown keys {sorted(unknown)}"
    if not isinstance(document["name"], str) or not isinstance(document["platform"], str):
        return "name and platform must be strings"
    versions = document["versions"]
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        return "versions must be a list of strings"
    custom = document["custom"]
    if not isinstance(custom, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in custom.items()
    ):
        return "custom must map strings to strings"
    for key in ("inputs", "outputs"):
        if not isinstance(document[key], list):
            return f"{key} must be a list"
        for item in document[key]:
            problem = _tensor_problem(item)
            if problem:
                return f"{key}: {problem}"
    return None


def _tensor_problem(item: Any) -> str | None:
    """Why ``item`` is neither a SeldonMessage description nor a V2 tensor description."""
    if not isinstance(item, dict):
        return f"{item!r} is not an object"
    if "messagetype" in item:
        kind, schema = item["messagetype"], item.get("schema")
        if set(item) - {"messagetype", "schema"}:
            return f"unknown keys in {item!r}"
        if kind in TENSOR_TYPES:
            return _tensor_schema_problem(schema)
        if kind in ("strData", "binData"):
            return None if schema is None else f"{kind} takes no schema"
        if schema is not None and not isinstance(schema, dict):
            return f"the schema of {kind} must be an object"
        return None
    if set(item) != {"name", "datatype", "shape"}:
        return f"{item!r} needs exactly name, datatype and shape (or a messagetype)"
    if not isinstance(item["name"], str) or item["datatype"] not in V2_DATATYPES:
        return f"{item!r} has a bad name or datatype"
    if not isinstance(item["shape"], list) or not all(_is_int(n) for n in item["shape"]):
        return f"{item!r} shape must be a list of integers"
    return None


def _tensor_schema_problem(schema: Any) -> str | None:
    if schema is None:
        return None
    if not isinstance(schema, dict) or set(schema) - {"names", "shape"}:
        return f"tensor schema {schema!r} takes only names and shape"
    names, shape = schema.get("names", []), schema.get("shape", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "schema names must be strings"
    if not isinstance(shape, list) or not all(_is_int(n) for n in shape):
        return "schema shape must be integers"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
