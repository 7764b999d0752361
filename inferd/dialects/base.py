"""What a dialect is: a way to turn a serve target into models, plus the routes its clients speak."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.registry import ModelFactory
from inferd.core.settings import Settings

#: A platform's environment variable → (the inferd setting it gives, how to read its text).
EnvironmentTable = Mapping[str, tuple[str, Callable[[str], Any]]]


def settings_from(table: EnvironmentTable, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` overridden by every variable of ``table`` that is set and not empty."""
    found = dict(defaults)
    for variable, (setting, convert) in table.items():
        value = os.environ.get(variable)
        if value:
            found[setting] = convert(value)
    return found


@dataclass(frozen=True)
class ServedModel:
    """One model a target yields: its name, version and how to build it in each process."""

    name: str
    factory: ModelFactory
    version: str | None = None


class Dialect(Protocol):
    name: str
    #: GET paths of the platform's health checks, which run no model code: open without a token.
    health_paths: tuple[str, ...]

    def detect(self, target: str) -> bool:
        """Whether ``target`` looks like code of this convention (cheap; may import the target)."""

    def settings_from_environment(self) -> dict[str, Any]:
        """Settings the platform's own environment variables give (Seldon's ports, say); they apply
        where neither an option nor an ``INFERD_`` variable set the field."""

    def models(self, settings: Settings) -> list[ServedModel]:
        """The models ``settings.target`` yields; raises TargetError with what was expected."""

    def routes(self, dataplane: DataPlane, settings: Settings) -> list[BaseRoute]:
        """REST routes of the dialect's own wire protocol, beside V2."""

    def grpc_services(self, dataplane: DataPlane, settings: Settings) -> list[Any]:
        """Callables ``add(server)`` registering the dialect's gRPC servicers, beside V2."""
