"""What an ABEJA handler gives back, turned into an `Answer`: status, body bytes, content type, headers.

19.04+ handlers return a dict whose ``content`` is serialized by the runtime's rules, quirks included
(``content: [1, 2, 3]`` is three JSON lines; bare ``bytes`` are a sequence of ints), because clients
were written against them. 18.10 generators yield JSON values (one → that value, several → an array)
or a single `datatypes.Response`. Error bodies are the platform's, built by plain string formatting
where the proxy did so (no JSON escaping).
"""

from __future__ import annotations

import csv
import datetime
import io
import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import orjson

from inferd.dialects.abeja.datatypes import Response
from inferd.dialects.abeja.exceptions import InvalidInput
from inferd.protocols.status import scrubbed, without_addresses

JSON = "application/json"


class Answer(NamedTuple):
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()


class HandlerResultError(Exception):
    """The handler returned or yielded something that cannot be sent as an answer."""


UNEXPECTED_ERROR = Answer(500, b'{"status":"unexpected error occurred"}', JSON)
SERVICE_UNAVAILABLE = Answer(503, b'{"status":"service unavailable"}', JSON)


def unsupported_content_type(content_type: str) -> Answer:
    """The proxy's 501 for a method or Content-Type it does not take (formatted, not escaped)."""
    return Answer(501, f'{{"status":"Content-Type: [{content_type}] is not supported"}}'.encode(), JSON)


# --- 19.04+: a returned dict --------------------------------------------------------------------


def from_return_value(value: Any) -> Answer:
    """The HTTP answer of a 19.04+ handler's return value; `HandlerResultError` if it is not a dict
    of the documented shape."""
    if not isinstance(value, dict):
        raise HandlerResultError(f"handler returned {type(value).__name__}, not a dict")
    status = _status(value.get("status_code", 200))
    content_type = value.get("content_type") or "text/plain"
    if not isinstance(content_type, str):
        raise HandlerResultError(f"content_type must be a str, not {type(content_type).__name__}")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise HandlerResultError(f"metadata must be a dict of headers, not {type(metadata).__name__}")
    headers = tuple((str(name), str(header)) for name, header in metadata.items())
    return Answer(status, serialize(value.get("content"), content_type), content_type, headers)


def _status(value: Any) -> int:
    status = int(value) if isinstance(value, int) else -1  # HTTPStatus is an int
    if not 100 <= status <= 599:
        raise HandlerResultError(f"status_code must be an HTTP status, not {value!r}")
    return status


def serialize(content: Any, content_type: str) -> bytes:
    """The runtime's body rules: bytes items raw and joined; str items UTF-8 and other items
    ``json.dumps`` (default separators, ASCII escapes), each on its own line; dict items as CSV rows
    for ``text/csv``. A dict or str content is one item; any other iterable is the items."""
    if content is None:
        return b""
    if isinstance(content, dict) and not _is_csv(content_type):  # the common case, without the loop
        return _ENCODER.encode(content).encode()
    items: Iterable[Any] = [content] if isinstance(content, (dict, str)) else content
    csv_rows = _is_csv(content_type)
    buffer = io.BytesIO()
    writer: csv.DictWriter[Any] | None = None
    for item in _key_pairs_as_dicts(iter(items)):
        if isinstance(item, (bytes, bytearray, memoryview)):
            buffer.write(item)
        elif isinstance(item, str):
            _new_line(buffer)
            buffer.write(item.encode())
        elif csv_rows:
            writer = writer or _csv_writer(buffer, item)
            writer.writerow(item)
        else:
            _new_line(buffer)
            buffer.write(_ENCODER.encode(item).encode())
    return buffer.getvalue()


def _is_csv(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "text/csv"


def _key_pairs_as_dicts(items: Iterator[Any]) -> Iterator[Any]:
    """A list of ``(key, value)`` pairs is an ordered dict; a list that is not pairs stays a list."""
    for item in items:
        if isinstance(item, list):
            try:
                item = OrderedDict(item)
            except (TypeError, ValueError):
                pass
        yield item


def _new_line(buffer: io.BytesIO) -> None:
    if buffer.tell():
        buffer.write(b"\n")


def _csv_writer(buffer: io.BytesIO, first_row: Any) -> csv.DictWriter[Any]:
    if not isinstance(first_row, dict):
        raise HandlerResultError(f"text/csv content items must be dicts, not {type(first_row).__name__}")
    writer = csv.DictWriter(_Utf8(buffer), list(first_row))
    writer.writeheader()
    return writer


class _Utf8:
    """The text file `csv` writes to, encoding into the byte buffer as it goes."""

    def __init__(self, buffer: io.BytesIO) -> None:
        self.buffer = buffer

    def write(self, text: str) -> int:
        return self.buffer.write(text.encode())


def _json_default(value: Any) -> Any:
    """What the runtime's JSON encoder added to ``json``: numpy values and dates."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: ``json.dumps`` with the default above, built once: ``json.dumps(default=...)`` builds one per call.
_ENCODER = json.JSONEncoder(default=_json_default)


# --- 18.10: yielded values ----------------------------------------------------------------------


def from_yields(values: list[Any]) -> Answer:
    """One yield is the body, several a JSON array, none ``[]``; a `Response` must be alone."""
    responses = [value for value in values if isinstance(value, Response)]
    if not responses:
        return Answer(200, dumps_compact(values[0] if len(values) == 1 else values), JSON)
    if len(values) > 1:
        raise HandlerResultError("a datatypes.Response must be the only value a handler yields")
    return _from_response(responses[0])


def _from_response(response: Response) -> Answer:
    body = b"".join(_response_item(item) for item in response.contents)
    headers = tuple((str(name), str(value)) for name, value in response.metadata)
    content_type = next((value for name, value in headers if name.lower() == "content-type"), JSON)
    others = tuple((name, value) for name, value in headers if name.lower() != "content-type")
    return Answer(200, body, content_type, others)


def _response_item(item: Any) -> bytes:
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode()
    return dumps_compact(item)


def dumps_compact(value: Any) -> bytes:
    """Compact JSON with numpy arrays and scalars as lists and numbers."""
    try:
        return orjson.dumps(
            value, default=_json_default, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
        )
    except TypeError as exc:
        raise HandlerResultError(f"handler yielded a value that is not JSON: {exc}") from None


def error_answer(exc: BaseException) -> Answer:
    """The 18.10 error bodies: `InvalidInput` is the client's fault (400), anything else 500, whose
    description has no traceback or file path (`scrubbed`); neither has object addresses."""
    if isinstance(exc, InvalidInput):
        error, status, description = "bad_request", 400, without_addresses(str(exc))
    else:
        error, status, description = "internal_server_error", 500, scrubbed(str(exc))
    return Answer(status, orjson.dumps({"error": error, "error_description": description}), JSON)
