"""The ``request`` argument of a 19.04+ handler: a read-only Mapping that also reads like a file.

Its ``contents`` are parts: one for a plain body (or a GET's raw query string), one per form part for
``multipart/form-data``. ``json.load(request)`` works because ``read`` reads the first part. Parts are
closed after the handler returns.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from inferd.core.errors import PayloadTooLarge
from inferd.dialects.abeja.exceptions import InvalidInput
from inferd.protocols.forms import DEFAULT_UPLOAD_LIMITS, UploadLimits, safe_file_name

GET_CONTENT_TYPE = "application/x-www-form-urlencoded"


class Part(Mapping[str, Any]):
    """One body part: ``content_type``, ``file_name``, ``form_name``, ``metadata`` and ``body``, a
    binary file."""

    def __init__(
        self,
        body: bytes,
        content_type: str | None = None,
        file_name: str | None = None,
        form_name: str | None = None,
        metadata: Any = None,
    ) -> None:
        self._fields = {
            "content_type": content_type,
            "file_name": file_name,
            "form_name": form_name,
            "metadata": metadata,
            "body": io.BytesIO(body),
        }

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def read(self, size: int = -1) -> bytes:
        body: io.BytesIO = self._fields["body"]
        return body.read(size)

    def close(self) -> None:
        self._fields["body"].close()


class HttpHeaders:
    """Case-insensitive headers: ``h["Accept"]`` is the last value or None; ``h.get_all(k)`` all of them;
    iteration yields ``(key, value)`` pairs."""

    def __init__(self, headers: Iterable[tuple[str, str]]) -> None:
        self._items = [(key.lower(), value) for key, value in headers]

    def __getitem__(self, key: str) -> str | None:
        values = self.get_all(key)
        return values[-1] if values else None

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self[key]
        return default if value is None else value

    def get_all(self, key: str) -> list[str]:
        wanted = key.lower()
        return [value for name, value in self._items if name == wanted]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(self.get_all(key))

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Request(Mapping[str, Any]):
    """The handler's ``request``. The two views of the headers are built on first use: most handlers
    read only the body, and grouping and sorting headers would be a good part of a small request."""

    def __init__(
        self, method: str, content_type: str, headers: Iterable[tuple[str, str]], contents: list[Part]
    ) -> None:
        self._raw_headers = headers
        self._fields: dict[str, Any] = {
            "http_method": method,
            "content_type": content_type,
            "headers": None,
            "http_headers": None,
            "contents": contents,
        }

    def __getitem__(self, key: str) -> Any:
        if key == "metadata":
            if not self._fields["contents"]:
                raise ValueError("no content")
            return self._fields["contents"][0]["metadata"]
        value = self._fields[key]
        if value is None and key in ("headers", "http_headers"):
            self._group_headers()
            value = self._fields[key]
        return value

    def _group_headers(self) -> None:
        visible = [(key.lower(), value) for key, value in self._raw_headers if key.lower() != "host"]
        grouped: dict[str, list[str]] = {}
        for key, value in visible:
            grouped.setdefault(key, []).append(value)
        self._fields["headers"] = [{"key": key, "values": grouped[key]} for key in sorted(grouped)]
        self._fields["http_headers"] = HttpHeaders(visible)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._fields, "metadata"])

    def __len__(self) -> int:
        return len(self._fields) + 1

    def read(self, size: int = -1) -> bytes:
        if not self._fields["contents"]:
            raise ValueError("no body")
        first: Part = self._fields["contents"][0]
        return first.read(size)

    def close(self) -> None:
        for part in self._fields["contents"]:
            part.close()


def build_request(
    method: str,
    content_type: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    query: bytes,
    limits: UploadLimits = DEFAULT_UPLOAD_LIMITS,
) -> Request:
    """The request a handler sees; ``content_type`` must already be known to be acceptable."""
    if method == "GET":
        return Request(method, GET_CONTENT_TYPE, headers, [Part(query)])
    if content_type.split(";", 1)[0].strip().lower() == "multipart/form-data":
        return Request(method, content_type, headers, parse_multipart(body, content_type, limits))
    return Request(method, content_type, headers, [Part(body)])


def parse_multipart(
    body: bytes, content_type: str, limits: UploadLimits = DEFAULT_UPLOAD_LIMITS
) -> list[Part]:
    """Split a ``multipart/form-data`` body into parts (python-multipart's streaming parser). Every
    part counts as a file of ``limits``; more or larger ones are `PayloadTooLarge`, found as the body
    is parsed. A part's file name is made safe (`safe_file_name`)."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    _, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if not boundary:
        raise InvalidInput("multipart/form-data without a boundary")
    parts: list[Part] = []
    headers: dict[str, str] = {}
    field: list[bytes] = []
    value: list[bytes] = []
    data: list[bytes] = []

    def on_header_end() -> None:
        headers[b"".join(field).decode("latin-1").lower()] = b"".join(value).decode("utf-8", "replace")
        field.clear()
        value.clear()

    size = 0

    def on_part_data(chunk: bytes, start: int, end: int) -> None:
        nonlocal size
        size += end - start
        if size > limits.max_size:
            raise limits.too_large(None)
        data.append(chunk[start:end])

    def on_part_end() -> None:
        nonlocal size
        if len(parts) >= limits.max_files:
            raise limits.too_many_files()
        _, disposition = parse_options_header(headers.get("content-disposition", ""))
        name, file_name = disposition.get(b"name"), disposition.get(b"filename")
        parts.append(
            Part(
                b"".join(data),
                headers.get("content-type"),
                safe_file_name(file_name.decode("utf-8", "replace")) if file_name is not None else None,
                name.decode("utf-8", "replace") if name is not None else None,
            )
        )
        headers.clear()
        data.clear()
        size = 0

    callbacks: Any = {
        "on_header_field": lambda chunk, start, end: field.append(chunk[start:end]),
        "on_header_value": lambda chunk, start, end: value.append(chunk[start:end]),
        "on_header_end": on_header_end,
        "on_part_data": on_part_data,
        "on_part_end": on_part_end,
    }
    parser = MultipartParser(boundary, callbacks)
    try:
        parser.write(body)
        parser.finalize()
    except PayloadTooLarge:
        raise
    except Exception as exc:
        raise InvalidInput(f"malformed multipart body: {exc}") from None
    return parts
