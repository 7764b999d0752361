"""DEEPaaS argument parsing: webargs 5 semantics over the model's marshmallow fields (spec §5).

Each field is read from its ``location`` metadata when it has one, else from the query string, then
the form, then a JSON body; the first place holding the key wins. ``List`` fields take every value of
a repeated key. Files become `UploadedFile` temporary copies. The values are then loaded by one
marshmallow schema built from the fields, so every validation error comes back at once as webargs
reported it: field name → list of messages (422).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.dialects.deepaas import responses, uploads
from inferd.protocols.asgi import Answer
from inferd.protocols.forms import UploadLimits, read_form

logger = logging.getLogger("inferd.deepaas")

ACCEPT = "accept"
ANY_TYPE = "*/*"
#: Where each ``location`` reads from; no location means query, form, then JSON.
LOCATIONS = {
    "query": ("query",),
    "querystring": ("query",),
    "form": ("form",),
    "files": ("form",),  # upstream always failed with 500 here; inferd reads the form
    "json": ("json",),
    "headers": ("headers",),
    "cookies": ("cookies",),
    "match_info": ("path",),
    "path": ("path",),
}
DEFAULT_LOCATIONS = ("query", "form", "json")
JSON_TYPES = ("application/json", "+json")
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


class ArgumentError(Exception):
    """The request's arguments do not validate: ``messages`` is webargs' field → messages dict."""

    def __init__(self, messages: Any) -> None:
        super().__init__(messages)
        self.messages = messages


class MalformedBody(Exception):
    """The body cannot be read as what its content type says (malformed multipart or JSON)."""


@dataclass
class Arguments:
    """A model's declared arguments with the schema that loads them, built once at load."""

    fields: dict[str, fields.Field]
    schema: Schema
    #: The declared ``accept`` choices (without ``*/*``), None when there is no ``accept`` argument.
    accept: list[str] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.fields)


@dataclass
class Parsed:
    values: dict[str, Any]
    temp_files: list[str] = field(default_factory=list)


def declare(declared: Mapping[str, fields.Field] | None, for_predict: bool = False) -> Arguments:
    """The arguments of ``get_predict_args()`` / ``get_train_args()``. On predict an ``accept`` argument
    also takes ``*/*`` and defaults to its first choice, as DEEPaaS set it up (§6.1)."""
    own = {name: copy.deepcopy(value) for name, value in (declared or {}).items()}
    accept = None
    if for_predict and ACCEPT in own:
        accept = _prepare_accept(own[ACCEPT])
    schema = Schema.from_dict(own, name="Arguments")(unknown=EXCLUDE)
    return Arguments(own, schema, accept)


def _prepare_accept(accept: fields.Field) -> list[str] | None:
    choices = next((list(v.choices) for v in accept.validators if isinstance(v, validate.OneOf)), None)
    if choices is None:
        logger.warning("the 'accept' argument has no OneOf validator; it is taken as a free string")
        return None
    accept.validators = [v for v in accept.validators if not isinstance(v, validate.OneOf)]
    accept.validators.append(
        validate.OneOf([*choices, ANY_TYPE], error=f"Must be one of: {', '.join(map(str, choices))}.")
    )
    accept.load_default = choices[0]
    return [str(choice) for choice in choices]


async def parse(request: Request, arguments: Arguments, limits: UploadLimits) -> Parsed:
    """The loaded argument values of ``request``; ArgumentError (422) when they do not validate.
    Temporary copies of uploaded files are listed in the result, for the caller to remove."""
    content_type = request.headers.get("content-type", "")
    form: FormData | None = None
    body: Any = None
    if any(kind in content_type for kind in FORM_TYPES):
        try:
            form = await read_form(request, limits)
        except PayloadTooLarge:
            raise
        except InvalidInput as exc:
            raise MalformedBody(exc.message) from None
    elif any(kind in content_type for kind in JSON_TYPES):
        raw = await request.body()
        if raw:
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                body = None  # as webargs 5 did: arguments elsewhere still count, missing ones are 422
    parsed = Parsed({})
    try:
        data: dict[str, Any] = {}
        for name, declared in arguments.fields.items():
            value = await _read(request, name, declared, form, body, parsed)
            if value is not None:
                data[name] = value
        try:
            parsed.values = arguments.schema.load(data)
        except ValidationError as exc:
            raise ArgumentError(exc.messages) from None
    except BaseException:
        uploads.remove(parsed.temp_files)
        raise
    finally:
        if form is not None:
            await form.close()
    return parsed


async def _read(
    request: Request, name: str, declared: fields.Field, form: FormData | None, body: Any, parsed: Parsed
) -> Any:
    """The raw value of one field from the first location holding it (None when none does)."""
    location = declared.metadata.get("location")
    sources = LOCATIONS.get(str(location), DEFAULT_LOCATIONS) if location else DEFAULT_LOCATIONS
    many = isinstance(declared, fields.List)
    for source in sources:
        if source == "query" and name in request.query_params:
            values = request.query_params.getlist(name)
            return values if many else values[0]
        if source == "form" and form is not None and name in form:
            values = [await _form_value(name, value, parsed) for value in form.getlist(name)]
            return values if many else values[0]
        if source == "json" and isinstance(body, dict) and name in body:
            return body[name]
        if source == "headers" and name in request.headers:
            values = request.headers.getlist(name)
            return values if many else values[0]
        if source == "cookies" and name in request.cookies:
            return request.cookies[name]
        if source == "path" and name in request.path_params:
            return request.path_params[name]
    return None


async def _form_value(name: str, value: str | UploadFile, parsed: Parsed) -> Any:
    if isinstance(value, str):
        return value
    uploaded = await uploads.save(name, value)
    parsed.temp_files.append(uploaded.filename)
    return uploaded


async def parse_or_error(request: Request, arguments: Arguments, limits: UploadLimits) -> Parsed | Answer:
    """The parsed arguments, or DEEPaaS's answer when they do not parse: 422 with webargs' messages,
    400 for a body that is not what its content type says, 413 for uploads over the limits."""
    try:
        return await parse(request, arguments, limits)
    except PayloadTooLarge as exc:
        return responses.text_answer(413, exc.message)
    except ArgumentError as exc:
        return responses.json_answer(exc.messages, 422)
    except MalformedBody as exc:
        return responses.text_answer(400, str(exc))


async def parse_or_answer(request: Request, arguments: Arguments, limits: UploadLimits) -> Parsed | Response:
    """`parse_or_error` for a function endpoint: the error as a Starlette `Response`."""
    parsed = await parse_or_error(request, arguments, limits)
    return parsed if isinstance(parsed, Parsed) else responses.response(parsed)
