"""The JSON bodies ABEJA's CLI and SDK send, validated by pydantic. Fields inferd has no use for
(``record_channel_id``, ``min_instance_number``...) are accepted and ignored, as ABEJA's
clients send them; fields inferd uses are checked (environment names as ABEJA's CLI checks them)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from inferd.core.errors import InvalidInput
from inferd.platform.abeja.extras import DEFAULT_HANDLER, DEFAULT_IMAGE, DEFAULT_INSTANCE_TYPE
from inferd.platform.records import Scaling

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HANDLER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*")
Environment = dict[str, str]


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _environment(value: Environment) -> Environment:
    for key in value:
        if not ENV_NAME.fullmatch(key):
            raise ValueError(f"{key!r} is not an environment variable name ({ENV_NAME.pattern})")
    return value


def _optional_environment(value: Environment | None) -> Environment | None:
    return None if value is None else _environment(value)


class NewDeployment(Body):
    name: str
    description: str | None = ""
    default_environment: Environment = Field(default_factory=dict)

    _check = field_validator("default_environment")(_environment)


class NewVersion(Body):
    version: str
    image: str = DEFAULT_IMAGE
    handler: str = DEFAULT_HANDLER
    user_parameters: Environment = Field(default_factory=dict)

    _check = field_validator("user_parameters")(_environment)

    @field_validator("handler")
    @classmethod
    def _handler(cls, value: str) -> str:
        if not HANDLER.fullmatch(value):
            raise ValueError(f"handler {value!r} must be module:function, e.g. {DEFAULT_HANDLER}")
        return value


class NewService(Body):
    version_id: str
    environment: Environment = Field(default_factory=dict)
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_number: int = Field(1, ge=1, le=64)
    enable_autoscale: bool = False
    #: ABEJA ignores it (its CLI says so: the minimum is ``instance_number``); so does inferd.
    min_instance_number: int | None = Field(None, ge=1, le=64)
    max_instance_number: int | None = Field(None, ge=1, le=64)
    #: ``{alias: training model id}`` (``-m``): unpacked as its ``ABEJA_TRAINING_RESULT_DIR``.
    models: dict[str, str] | None = None

    def scaling(self) -> Scaling:
        """``instance_number`` replicas; with autoscaling, up to ``max_instance_number`` (ABEJA's
        default: twice ``instance_number``). A maximum below the instances is refused, naming it."""
        if not self.enable_autoscale:
            return Scaling(self.instance_number, self.instance_number)
        high = self.max_instance_number or min(64, 2 * self.instance_number)
        if high < self.instance_number:
            raise InvalidInput(
                f"max_instance_number ({high}) must not be below instance_number ({self.instance_number})"
            )
        return Scaling(self.instance_number, high)

    _check = field_validator("environment")(_environment)


class NewEndpoint(Body):
    service_id: str
    custom_alias: str = "default"


class EndpointChange(Body):
    service_id: str


class NewRun(Body):
    """``submit-run``: ``input_data``/``output_template`` map an operator (``$datalake:1``) to where;
    ``retry_count`` is accepted (0 to 9, as ABEJA checks it) but a run is tried once."""

    version_id: str
    input_data: dict[str, str] = Field(default_factory=dict)
    output_template: dict[str, str] | None = None
    environment: Environment | None = None
    retry_count: int = Field(0, ge=0, le=9)
    models: dict[str, str] | None = None

    _check = field_validator("environment")(_optional_environment)


class NewTrigger(Body):
    """``create-trigger``: the input (and output) service is ``datalake`` with a channel id."""

    version_id: str
    input_service_name: str
    input_service_id: str
    output_service_name: str | None = None
    output_service_id: str | None = None
    environment: Environment | None = None
    retry_count: int = Field(0, ge=0, le=9)
    models: dict[str, str] | None = None

    _check = field_validator("environment")(_optional_environment)


def parse(model: type[Body], raw: bytes) -> Any:
    try:
        return model.model_validate_json(raw or b"{}")
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        said = (
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors(include_url=False)
            )
            if errors is not None
            else str(exc)
        )
        raise InvalidInput(f"invalid request body: {said}") from None
