"""What a dialect is: a way to turn a serve target into models, plus the routes its clients speak."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.model import PredictInThread
from inferd.core.repository import ModelSource
from inferd.core.repository import ServedModel as ServedModel  # where the dialects take it from
from inferd.core.settings import DialectSettings
from inferd.core.types import TensorSpec

if TYPE_CHECKING:  # only its type: a dialect that is not Seldon's does not load Seldon's codec
    from inferd.protocols.seldon.component import Component

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


#: The forms a model is tried with (see `TryForm`).
FormKind = Literal["v2", "json", "fields", "body"]


@dataclass(frozen=True)
class TryForm:
    """How a person (the try-it page) or ``inferd call`` sends one request to a model over its dialect's
    own protocol, so neither needs to know the dialects.

    ``kind`` says what is filled in: ``v2`` one JSON value per declared input tensor, sent as a V2
    infer request; ``json`` a JSON document sent as is; ``fields`` named arguments (``fields`` holds
    their Swagger 2.0 parameter objects: ``name``, ``in``, ``type``, ``enum``, ``default``,
    ``required``, ``description``; ``type: file`` is an upload) sent as multipart form data, those
    ``in: header`` as headers; ``body`` a JSON document or an uploaded file sent as the raw body with
    the file's content type. ``example`` is a body to start from."""

    kind: FormKind
    path: str
    example: Any = None
    fields: tuple[Mapping[str, Any], ...] = ()
    method: str = "POST"


#: The most values an example tensor holds; a larger one is left for the user to fill in.
EXAMPLE_SIZE = 256


def example_tensor(spec: TensorSpec) -> Any:
    """Zeros (empty strings for BYTES) in ``spec``'s shape as nested lists, one row per free dimension;
    None when that would be larger than `EXAMPLE_SIZE` values."""
    shape = tuple(1 if size < 0 else size for size in spec.shape)
    if int(np.prod(shape)) > EXAMPLE_SIZE:
        return None
    fill: Any = "" if spec.datatype == "BYTES" else (False if spec.datatype == "BOOL" else 0)
    return np.full(shape, fill, dtype=object).tolist()


@runtime_checkable
class ServesRepository(Protocol):
    """A dialect whose models can change while the server runs (a model repository): the registry
    reconciles with its source, polls it, and loads models on demand within a limit."""

    def source(self, settings: Any) -> ModelSource:
        """The repository the settings name."""

    def poll_seconds(self, settings: Any) -> float | None:
        """How often the repository is read again for changes (None: only on an explicit load)."""

    def max_loaded(self, settings: Any) -> int | None:
        """The most models loaded at once (None: every model stays loaded)."""


@runtime_checkable
class ServesMetrics(Protocol):
    """A dialect whose platform scrapes a metrics server of its own (Seldon's): the metrics port
    serves its routes instead of inferd's ``/metrics``."""

    def metrics_routes(self) -> list[BaseRoute]:
        """The routes of the metrics port."""


@runtime_checkable
class BuildsSeldonComponents(Protocol):
    """A dialect whose user classes are Seldon components (Seldon's): a graph runs them as nodes in its
    own process through this, without importing the dialect."""

    def seldon_component(
        self,
        target: str,
        parameters: dict[str, Any],
        service_type: str,
        predict_in_thread: PredictInThread,
        unit: tuple[str, str],
    ) -> Callable[[], Component]:
        """How to build the component class ``target`` names, as the unit (id, image) of a graph; the
        class is imported now, so a bad target fails before anything is served."""


#: A dialect's own settings class.
OwnSettings = TypeVar("OwnSettings", bound=DialectSettings)


class Dialect(Protocol[OwnSettings]):
    """A handler convention. Its methods are given its own settings (``settings_type``: what every
    dialect reads and the dialect's own fields), never the server's."""

    name: str
    settings_type: type[OwnSettings]
    #: GET paths of the platform's health checks, which run no model code: open without a token.
    health_paths: tuple[str, ...]

    def detect(self, target: str) -> bool:
        """Whether ``target`` looks like code of this convention (cheap; may import the target)."""

    def settings_from_environment(self) -> dict[str, Any]:
        """Settings the platform's own environment variables give (Seldon's ports, say); they apply
        where neither an option nor an ``INFERD_`` variable set the field."""

    def models(self, settings: OwnSettings) -> list[ServedModel]:
        """The models ``settings.target`` yields; raises TargetError with what was expected."""

    def routes(self, dataplane: DataPlane, settings: OwnSettings) -> list[BaseRoute]:
        """REST routes of the dialect's own wire protocol, beside V2."""

    def grpc_services(self, dataplane: DataPlane, settings: OwnSettings) -> list[Any]:
        """Callables ``add(server)`` registering the dialect's gRPC servicers, beside V2."""

    def try_form(self, name: str, dataplane: DataPlane, settings: OwnSettings) -> TryForm | None:
        """How model ``name`` (loaded and ready) is tried over the dialect's own protocol; None for a
        model tried over V2 only."""
