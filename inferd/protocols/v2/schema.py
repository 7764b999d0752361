"""Validation of V2 JSON request bodies, with messages that name the offending field.

The inference body is checked by hand after one orjson parse: it is the hot path, and a pydantic
model costs several times more per request for the same answers. Rare bodies use pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from inferd.core.errors import InvalidInput
from inferd.protocols.json import loads

_SCALARS = (str, int, float, bool)


def parse_infer_body(raw: bytes | memoryview) -> dict[str, Any]:
    """The inference body as plain JSON data, checked field by field."""
    body = loads(raw)
    _expect(isinstance(body, dict), "body", "must be a JSON object")
    inputs = body.get("inputs")
    _expect(isinstance(inputs, list), "inputs", "must be a list of tensors")
    for index, tensor in enumerate(inputs):
        _check_input(f"inputs.{index}", tensor)
    _expect(body.get("id") is None or isinstance(body["id"], str), "id", "must be a string")
    _check_parameters("parameters", body.get("parameters"))
    outputs = body.get("outputs")
    _expect(outputs is None or isinstance(outputs, list), "outputs", "must be a list")
    for index, output in enumerate(outputs or ()):
        where = f"outputs.{index}"
        _expect(isinstance(output, dict), where, "must be an object")
        _expect(isinstance(output.get("name"), str), f"{where}.name", "must be a string")
        _check_parameters(f"{where}.parameters", output.get("parameters"))
    checked: dict[str, Any] = body
    return checked


def _check_input(where: str, tensor: Any) -> None:
    _expect(isinstance(tensor, dict), where, "must be an object")
    _expect(isinstance(tensor.get("name"), str), f"{where}.name", "must be a string")
    _expect(isinstance(tensor.get("datatype"), str), f"{where}.datatype", "must be a string")
    shape = tensor.get("shape")
    _expect(
        isinstance(shape, list)
        and all(isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 for dim in shape),
        f"{where}.shape",
        "must be a list of non-negative integers",
    )
    _check_parameters(f"{where}.parameters", tensor.get("parameters"))


def _check_parameters(where: str, parameters: Any) -> None:
    if parameters is None:
        return
    _expect(isinstance(parameters, dict), where, "must be an object")
    for key, value in parameters.items():
        _expect(isinstance(value, _SCALARS), f"{where}.{key}", "must be a string, number or boolean")


def _expect(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise InvalidInput(f"invalid request body: {where} {problem}")


class RepositoryIndexBody(BaseModel):
    # Validators built on the first repository call, not at every start (most servers get none).
    model_config = ConfigDict(extra="ignore", defer_build=True)

    repository_name: str | None = None
    ready: bool = False


class RepositoryLoadBody(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    parameters: dict[str, Any] = Field(default_factory=dict)


def parse(model: type[BaseModel], body: bytes | str) -> Any:
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
