"""Pydantic models of the V2 JSON request bodies; validation errors become readable 400 messages."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from inferd.core.errors import InvalidInput

Parameter = StrictBool | StrictInt | StrictFloat | StrictStr
Parameters = dict[str, Parameter]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RequestInput(_Body):
    name: str
    shape: list[NonNegativeInt]
    datatype: str
    parameters: Parameters | None = None
    data: Any = None


class RequestOutput(_Body):
    name: str
    parameters: Parameters | None = None


class InferenceRequestBody(_Body):
    id: str | None = None
    parameters: Parameters | None = None
    inputs: list[RequestInput]
    outputs: list[RequestOutput] | None = None


class RepositoryIndexBody(_Body):
    repository_name: str | None = None
    ready: bool = False


def parse(model: type[_Body], body: bytes | str) -> Any:
    """Validate a JSON body against ``model``; malformed JSON and schema violations are InvalidInput."""
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        raise InvalidInput(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "invalid request body: " + "; ".join(problems)
