"""A client of a running inferd server, for ``inferd models`` and ``inferd call``.

The server's description of each model (``/inferd/api/models``, the try-it page's data) says how the
model is called over its dialect's protocol (a `TryForm`: V2, a JSON document, DEEPaaS arguments, a
raw body), so this client speaks each dialect without knowing any of them. Standard library only: the
command works wherever inferd is installed.
"""

from __future__ import annotations

import json
import mimetypes
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DESCRIPTION = "/inferd/api/models"
TIMEOUT = 300.0
JSON_TYPE = "application/json"


class ClientError(Exception):
    """What went wrong, in words for the command line (the server is not there, a bad argument...)."""


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    query: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes
    milliseconds: float

    @property
    def is_json(self) -> bool:
        kind = self.content_type.split(";", 1)[0].strip().lower()
        return kind == JSON_TYPE or kind.endswith("+json")

    def json(self) -> Any:
        return json.loads(self.body)


def send(url: str, request: Request) -> Answer:
    """Send ``request`` to the server at ``url``; an HTTP error status is an answer, not an error."""
    target = url.rstrip("/") + request.path
    if request.query:
        target += ("&" if "?" in target else "?") + urllib.parse.urlencode(request.query)
    prepared = urllib.request.Request(target, request.body, request.headers, method=request.method)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(prepared, timeout=TIMEOUT) as response:
            status, headers, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, headers, body = exc.code, exc.headers, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ClientError(f"cannot reach {url}: {reason}") from None
    elapsed = 1000 * (time.perf_counter() - started)
    return Answer(status, headers.get("content-type", ""), body, elapsed)


def _described(url: str, path: str) -> Any:
    answer = send(url, Request("GET", path, {"accept": JSON_TYPE}))
    if answer.status == 404 and path != DESCRIPTION:
        raise ClientError(_error_text(answer))
    if answer.status != 200 or not answer.is_json:
        raise ClientError(f"{url} does not describe its models (is it inferd?): HTTP {answer.status}")
    return answer.json()


def models(url: str) -> dict[str, Any]:
    """The server's description: ``{"server": ..., "models": [...]}``."""
    found: dict[str, Any] = _described(url, DESCRIPTION)
    return found


def model(url: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = _described(url, f"{DESCRIPTION}/{urllib.parse.quote(name, safe='')}")
    return found


def _error_text(answer: Answer) -> str:
    try:
        return str(answer.json()["error"])
    except (ValueError, KeyError, TypeError):
        return answer.body.decode("utf-8", "replace")


# --- building a request from the model's form ------------------------------------------------------


@dataclass
class Given:
    """What the user gave: a JSON value (``--data`` or a ``.json`` ``--input``), a file, named files."""

    data: Any = None
    file: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)


def given(data: str | None, input_file: Path | None, files: Mapping[str, Path]) -> Given:
    """``--data`` JSON, or an ``--input`` file: a ``.json`` one is read as data, any other is a file."""
    found = Given(files=dict(files))
    if data is not None:
        try:
            found.data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ClientError(f"--data is not JSON: {exc}") from None
    if input_file is not None:
        if not input_file.is_file():
            raise ClientError(f"no such file: {input_file}")
        if input_file.suffix.lower() == ".json" and data is None:
            try:
                found.data = json.loads(input_file.read_bytes())
            except json.JSONDecodeError as exc:
                raise ClientError(f"{input_file} is not JSON: {exc}") from None
        else:
            found.file = input_file
    return found


def build(form: Mapping[str, Any], what: Given) -> Request:
    """The request ``form`` (a model's ``try`` description) asks for, filled with ``what``."""
    builder = BUILDERS.get(str(form.get("kind")))
    if builder is None:
        raise ClientError(f"this inferd client does not know the form {form.get('kind')!r}; upgrade it")
    return builder(form, what)


def _json_request(form: Mapping[str, Any], body: Any) -> Request:
    return Request(form["method"], form["path"], {"content-type": JSON_TYPE}, json.dumps(body).encode())


def _needs_data(what: Given, kind: str) -> Any:
    if what.data is None:
        raise ClientError(f"give the {kind} with --data JSON or --input FILE.json")
    return what.data


def _v2(form: Mapping[str, Any], what: Given) -> Request:
    """A whole V2 request as given, or tensors from ``{input name: nested values}`` (a bare array
    for a model with one input)."""
    data = _needs_data(what, "V2 request or input values")
    if isinstance(data, dict) and "inputs" in data:
        return _json_request(form, data)
    specs = {spec["name"]: spec for spec in form.get("fields", ())}
    if not isinstance(data, dict):
        if len(specs) != 1:
            raise ClientError(f"give a JSON object of input values, one per input: {sorted(specs)}")
        data = {next(iter(specs)): data}
    inputs = []
    for name, value in data.items():
        values = value if isinstance(value, list) else [value]
        datatype = specs.get(name, {}).get("datatype") or _datatype_of(values)
        inputs.append({"name": name, "datatype": datatype, "shape": shape_of(values), "data": values})
    return _json_request(form, {"inputs": inputs})


def shape_of(values: Any) -> list[int]:
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        values = values[0] if values else None
    return shape


def _datatype_of(values: Any) -> str:
    while isinstance(values, list) and values:
        values = values[0]
    if isinstance(values, bool):
        return "BOOL"
    if isinstance(values, int):
        return "INT64"
    return "BYTES" if isinstance(values, str) else "FP32"


def _json(form: Mapping[str, Any], what: Given) -> Request:
    return _json_request(form, _needs_data(what, "JSON body"))


def _body(form: Mapping[str, Any], what: Given) -> Request:
    """A file as the raw body, typed by its extension; else the JSON given."""
    if what.file is not None:
        kind = mimetypes.guess_type(what.file.name)[0] or "application/octet-stream"
        return Request(form["method"], form["path"], {"content-type": kind}, what.file.read_bytes())
    return _json(form, what)


def _fields(form: Mapping[str, Any], what: Given) -> Request:
    """Named arguments from a JSON object, uploads from ``--file NAME=PATH`` (or ``--input`` for the one
    file argument): query ones in the URL, header ones as headers, the others as multipart form data."""
    params = {param["name"]: param for param in form.get("fields", ())}
    values = what.data if what.data is not None else {}
    if not isinstance(values, dict):
        raise ClientError("give the arguments as a JSON object: --data '{\"name\": value}'")
    files = dict(what.files)
    if what.file is not None:
        uploads = [name for name, param in params.items() if param.get("type") == "file"]
        if len(uploads) != 1:
            raise ClientError(
                f"--input needs a model with one file argument; use --file NAME=PATH ({uploads})"
            )
        files[uploads[0]] = what.file
    request = Request(form["method"], form["path"])
    parts: list[tuple[str, str]] = []
    for name, value in values.items():
        where = params.get(name, {}).get("in", "formData")
        for one in value if isinstance(value, list) else [value]:
            text = one if isinstance(one, str) else json.dumps(one)
            if where == "header":
                request.headers[name] = text
            elif where == "query":
                request.query.append((name, text))
            else:
                parts.append((name, text))
    for name in files:
        if name not in params:
            raise ClientError(f"the model has no argument {name!r}; it takes {sorted(params)}")
    if parts or files:
        request.body, request.headers["content-type"] = multipart(parts, files)
    return request


def multipart(parts: list[tuple[str, str]], files: Mapping[str, Path]) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body and its content type."""
    boundary = uuid.uuid4().hex
    chunks: list[bytes] = []
    for name, value in parts:
        chunks.append(_part_head(boundary, name) + b"\r\n" + value.encode() + b"\r\n")
    for name, path in files.items():
        if not path.is_file():
            raise ClientError(f"no such file: {path}")
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        head = _part_head(boundary, name, path.name) + f"Content-Type: {kind}\r\n".encode()
        chunks.append(head + b"\r\n" + path.read_bytes() + b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def _part_head(boundary: str, name: str, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{_quoted(name)}"'
    if filename:
        disposition += f'; filename="{_quoted(filename)}"'
    return f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()


def _quoted(value: str) -> str:
    """``value`` inside a quoted header parameter: a backslash and a quote escaped by a backslash (as
    multipart parsers read them back: python-multipart, Werkzeug), and CR and LF, which no quoted
    string may hold, as ``%0D`` and ``%0A`` (as browsers send them), so that a file's name cannot end
    the header and add others."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return escaped.replace("\r", "%0D").replace("\n", "%0A")


BUILDERS = {"v2": _v2, "json": _json, "fields": _fields, "body": _body}


def call(url: str, name: str, what: Given) -> tuple[Request, Answer]:
    """Call model ``name`` the way its dialect takes requests."""
    described = model(url, name)
    form = described.get("try")
    if not form:
        raise ClientError(f"model '{name}' is not ready ({described.get('state', '?').lower()})")
    request = build(form, what)
    return request, send(url, request)


# --- DEEPaaS training on a running server ----------------------------------------------------------

#: Job states after which a training changes no more.
FINISHED = frozenset({"done", "error", "cancelled"})


def _train_path(url: str, name: str) -> str:
    """The train route beside the model's predict route (which carries any DEEPaaS base path)."""
    form = model(url, name).get("try") or {}
    path = str(form.get("path", ""))
    if form.get("kind") != "fields" or not path.endswith("/predict/"):
        raise ClientError(f"model '{name}' is not a DEEPaaS model that is ready: only those train")
    return path[: -len("predict/")] + "train/"


def _record(answer: Answer, what: str) -> dict[str, Any]:
    if answer.status >= 400 or not answer.is_json:
        raise ClientError(f"{what}: HTTP {answer.status}: {_error_text(answer)}")
    found: dict[str, Any] = answer.json()
    return found


def start_training(url: str, name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Start a training of DEEPaaS model ``name`` with ``arguments`` (sent in the query string, where
    DEEPaaS reads arguments without a location); its train path and job record."""
    path = _train_path(url, name)
    query = [
        (key, one if isinstance(one, str) else json.dumps(one))
        for key, value in arguments.items()
        for one in (value if isinstance(value, list) else [value])
    ]
    answer = send(url, Request("POST", path, {"accept": JSON_TYPE}, query=query))
    return path, _record(answer, "the training was not started")


def follow_training(url: str, path: str, uuid_: str, poll_seconds: float = 1.0) -> Iterator[dict[str, Any]]:
    """The job's record every ``poll_seconds`` until it has finished (the last one yielded)."""
    while True:
        record = _record(send(url, Request("GET", f"{path}{uuid_}", {"accept": JSON_TYPE})), "the job")
        yield record
        if record.get("status") in FINISHED:
            return
        time.sleep(poll_seconds)
