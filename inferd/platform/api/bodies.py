"""Request bodies of the control API, validated by pydantic (unknown fields refused), and the JSON
form of each record."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from inferd.core.errors import InvalidInput
from inferd.platform.records import Scaling


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewDeployment(Body):
    name: str
    description: str = ""


class ScalingBody(Body):
    """How a service scales (min <= max is checked with the record)."""

    min_replicas: int = Field(1, ge=0, le=64, description="Fewest replicas (at least 1 on the local engine)")
    max_replicas: int = Field(1, ge=1, le=64, description="Most replicas the autoscaler runs")
    target_concurrency: float = Field(
        1.0, gt=0, le=10_000, description="Requests in flight per replica the autoscaler aims for"
    )
    replicas: int | None = Field(None, ge=1, le=64, description="Replicas now (default: min_replicas)")

    def scaling(self) -> Scaling:
        return Scaling(self.min_replicas, self.max_replicas, self.target_concurrency, self.replicas)


class NewService(ScalingBody):
    version: str = Field(description="The id of the version to run")
    workers: int = Field(
        1, ge=1, le=64, description="Worker processes of each replica, or Ray Serve replicas (engine ray)"
    )
    environment: dict[str, str] = Field(default_factory=dict)
    engine: Literal["local", "ray"] = Field(
        "local", description="local: inferd serve processes on loopback; ray: inferd serve --engine ray"
    )


class RouteBody(Body):
    service: str
    weight: int = Field(ge=0, le=100)


class ShadowBody(Body):
    service: str
    percent: int = Field(100, ge=0, le=100)


class EndpointBody(Body):
    routes: list[RouteBody] = Field(min_length=1)
    shadow: ShadowBody | None = None


class NewRun(Body):
    version: str = Field(description="The id of the version to run")
    inputs: list[str] = Field(
        min_length=1, max_length=1000, description="Absolute paths of files or folders, or storage URIs"
    )
    output: str = Field(
        description="The absolute path of the folder the answers are written to, or a storage prefix "
        "(s3://bucket/answers/) they are uploaded under"
    )
    parameters: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Environment variables of the run's process"
    )
    timeout: float | None = Field(
        None,
        gt=0,
        le=366 * 24 * 3600,
        description="Seconds the run may take once started, then it is stopped and failed "
        "(default: the control process's INFERD_RUN_TIMEOUT)",
    )


class NewTrigger(Body):
    version: str = Field(description="The id of the version each new file is run with")
    input: str = Field(description="An absolute folder path, or a storage prefix ending with '/'")
    output: str = Field(
        description="The absolute path of the folder the answers are written to, or a storage prefix "
        "(s3://bucket/answers/) they are uploaded under"
    )
    enabled: bool = True
    parameters: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Environment variables of each run's process"
    )


class TriggerChange(Body):
    enabled: bool


def parse(model: type[Body], raw: bytes) -> Any:
    try:
        return model.model_validate_json(raw or b"{}")
    except ValueError as exc:
        raise InvalidInput(f"invalid request body: {_said(exc)}") from None


def _said(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors(include_url=False)
    )


def record(value: Any) -> Any:
    """A record (or a list of them) as JSON values: enums by value, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: record(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [record(item) for item in value]
    if isinstance(value, dict):
        return {key: record(item) for key, item in value.items()}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value
