"""SeldonMessage JSON ↔ what user methods see (spec §3.2, §4.1).

`decode` turns a message into the features, names and meta a user method gets; `encode` turns a user
return value into the message's payload, mirroring the request's data type and keeping integers as
integers (REST never goes through protobuf). Both are pure functions of plain JSON values.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any, NamedTuple

import numpy as np
import orjson

from inferd.protocols.seldon import tftensor
from inferd.protocols.seldon.errors import SeldonError

#: Top-level payload keys in the order Seldon looks for them.
PAYLOAD_KEYS = ("data", "jsonData", "strData", "binData")
NO_NAMES: list[str] = []
#: The one V2 output an answer becomes (`as_output`).
OUTPUT = "output-0"


class Decoded(NamedTuple):
    """One message as a user method sees it; ``kind`` is ``data``'s type or the payload key."""

    features: Any
    names: list[str]
    meta: dict[str, Any] | None
    kind: str


#: The dtype kinds `np.number` covers: integers, floats, complex and timedelta (not bool).
NUMBER_KINDS = frozenset("iufcm")


def decode(message: Any) -> Decoded:
    """The features of ``message``; anything without a known payload key is bad data (400)."""
    if not isinstance(message, dict):
        raise SeldonError(f"Invalid request data type: {short(message)}")
    meta = checked_meta(message.get("meta"))
    if "data" in message:
        data = message["data"]
        if not isinstance(data, dict):
            raise SeldonError(f"Invalid request data type: 'data' must be an object, got {short(data)}")
        names = data.get("names") or NO_NAMES
        kind, features = datadef_to_array(data)
        return Decoded(features, names, meta, kind)
    if "jsonData" in message:
        return Decoded(message["jsonData"], NO_NAMES, meta, "jsonData")
    if "strData" in message:
        return Decoded(message["strData"], NO_NAMES, meta, "strData")
    if "binData" in message:
        return Decoded(b64decode(message["binData"]), NO_NAMES, meta, "binData")
    raise SeldonError(f"Invalid request data type: {short(message)}")


#: The parts of ``meta`` the server reads, and the JSON type each must have.
META_TYPES: dict[str, tuple[type, str]] = {
    "puid": (str, "string"),
    "tags": (dict, "object"),
    "routing": (dict, "object"),
    "requestPath": (dict, "object"),
    "metrics": (list, "list"),
}


def checked_meta(meta: Any) -> dict[str, Any] | None:
    """``meta`` if it is an object whose known parts have their types; else bad data."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise SeldonError(f"Invalid meta: expected an object, got {short(meta)}")
    for key, (kind, name) in META_TYPES.items():
        if meta.get(key) is not None and not isinstance(meta[key], kind):
            raise SeldonError(f"Invalid meta: '{key}' must be a JSON {name}")
    return meta


def datadef_to_array(data: dict[str, Any]) -> tuple[str, np.ndarray]:
    """(type, array) of a ``data`` object: ``tensor``, ``ndarray`` or ``tftensor``; none is empty."""
    if "tensor" in data:
        tensor = data["tensor"]
        if not isinstance(tensor, dict):
            raise SeldonError('Invalid tensor: expected {"shape": [...], "values": [...]}')
        values, shape = tensor.get("values", []), tensor.get("shape", [])
        try:
            return "tensor", np.array(values).reshape(shape)
        except (ValueError, TypeError) as exc:
            raise SeldonError(
                f"Invalid tensor: {len(values) if isinstance(values, list) else '?'} values "
                f"do not fill shape {shape}: {exc}"
            ) from None
    if "ndarray" in data:
        try:
            return "ndarray", np.array(data["ndarray"])
        except ValueError as exc:
            raise SeldonError(f"Invalid ndarray: {exc}") from None
    if "tftensor" in data:
        return "tftensor", tftensor.to_array(data["tftensor"])
    return "ndarray", np.array([])


def b64decode(text: Any) -> bytes:
    if not isinstance(text, str):
        raise SeldonError("Invalid binData: expected a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SeldonError(f"Invalid base64 in binData: {exc}") from None


def encode(result: Any, request_kind: str, class_names: Any) -> dict[str, Any]:
    """The payload part of a response for a user return value (§4.1); ``class_names`` gives ``names``
    for a result of two or more dimensions."""
    if isinstance(result, dict):
        return {"jsonData": result}
    if isinstance(result, (bytes, bytearray)):
        return {"binData": base64.b64encode(result).decode("ascii")}
    if isinstance(result, str):
        return {"strData": result}
    if isinstance(result, np.ndarray):
        array, as_list = result, None
    elif isinstance(result, list):
        array, as_list = _as_array(result), result
    else:
        raise SeldonError(f"Unknown data type returned as payload (must be list or np array):{short(result)}")
    numeric = array.dtype.kind in NUMBER_KINDS
    kind = request_kind if request_kind in ("tensor", "tftensor") else "tensor"
    if not numeric or request_kind == "ndarray":
        kind = "ndarray"
    data: dict[str, Any] = {"names": names_of(array, class_names)}
    if kind == "tensor":
        data["tensor"] = {"shape": list(array.shape), "values": array.ravel().tolist()}
    elif kind == "tftensor":
        data["tftensor"] = tftensor.from_array(array)
    else:
        data["ndarray"] = as_list if as_list is not None else array.tolist()
    return {"data": data}


#: The dtype ``np.array`` gives the lists ``tolist`` makes of an array, by the array's dtype kind
#: (unsigned integers of 8 bytes can exceed int64, so they take the long way).
LIST_ROUND_TRIP = {"f": np.float64, "i": np.int64, "b": np.bool_, "c": np.complex128}


def passed_on(result: Any, request_kind: str, class_names: Any, meta: dict[str, Any]) -> Decoded | None:
    """What `decode` would read back from the message `encode` makes of ``result`` (with ``meta``),
    without the round trip through lists: a graph hands it from one local node to the next. None for
    results that are not a non-empty numeric or boolean array, whose round trip this does not mirror."""
    if not isinstance(result, np.ndarray) or result.ndim == 0 or result.size == 0:
        return None
    kind_of_dtype = result.dtype.kind
    dtype = LIST_ROUND_TRIP.get(kind_of_dtype)
    if kind_of_dtype == "u" and result.dtype.itemsize < 8:
        dtype = np.int64
    if dtype is None or request_kind == "tftensor":
        return None
    kind = "ndarray" if request_kind == "ndarray" or kind_of_dtype == "b" else "tensor"
    return Decoded(result.astype(dtype), names_of(result, class_names), meta, kind)


def as_message(decoded: Decoded) -> dict[str, Any]:
    """The message of a `passed_on` answer, as `encode` would have made it."""
    features: np.ndarray = decoded.features
    data: dict[str, Any] = {"names": decoded.names}
    if decoded.kind == "tensor":
        data["tensor"] = {"shape": list(features.shape), "values": features.ravel().tolist()}
    else:
        data["ndarray"] = features.tolist()
    return {"data": data, "meta": decoded.meta or {}}


def as_output(body: Any) -> np.ndarray:
    """A response message as one V2 output: its ``data`` as an array; a ``strData``, ``binData`` or
    ``jsonData`` payload (or anything else) as one BYTES element."""
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, dict):
        if "tensor" in data:
            values = data["tensor"]
            tensor: np.ndarray = np.asarray(values["values"]).reshape(values["shape"])
            return tensor
        if "ndarray" in data:
            return np.asarray(data["ndarray"])
    if isinstance(body, dict) and "strData" in body:
        document: bytes = body["strData"].encode()
    elif isinstance(body, dict) and "binData" in body:
        document = b64decode(body["binData"])
    else:
        document = orjson.dumps(body.get("jsonData") if isinstance(body, dict) else body)
    return np.array([document], dtype=object)


def names_of(array: np.ndarray, class_names: Any) -> list[str]:
    """``class_names`` (a list, or a callable giving one) for results of ≥2 dims, else ``t:i`` per
    column; 1-D and empty results have no names."""
    if array.ndim < 2:
        return NO_NAMES
    names = class_names() if callable(class_names) else class_names
    if names is None:
        return list(_default_names(array.shape[1]))
    return list(names)


@functools.lru_cache(maxsize=64)
def _default_names(width: int) -> tuple[str, ...]:
    return tuple(f"t:{index}" for index in range(width))


def _as_array(values: list[Any]) -> np.ndarray:
    """A list result as an array only to learn its type and shape (ragged lists are objects)."""
    try:
        return np.array(values)
    except ValueError:
        return np.array(values, dtype=object)


def short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
