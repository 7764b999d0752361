"""The Seldon dialect: ``inferd serve MyModel --dialect seldon``, as ``seldon-core-microservice MyModel``.

The positional names a class: ``MyModel`` is class ``MyModel`` of module ``MyModel`` (in the working
directory), ``pkg.mod.Class`` splits at the last dot, and ``module:Class`` or ``file.py:Class`` work
too. ``--parameters`` (or ``PREDICTIVE_UNIT_PARAMETERS``) become the constructor's keyword arguments
with their declared types. Seldon's port and option variables fill the settings not given otherwise.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.errors import TargetError
from inferd.core.importer import add_to_path, import_from_string, split_target
from inferd.core.model import Model, PredictInThread
from inferd.core.model_settings import batch_settings
from inferd.dialects.base import EnvironmentTable, ServedModel, TryForm, example_tensor, settings_from
from inferd.dialects.seldon import grpc, prepackaged, rest
from inferd.dialects.seldon.component import SeldonModel
from inferd.dialects.seldon.settings import SeldonSettings
from inferd.dialects.seldon.stand_in import install_aliases
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon.component import Component
from inferd.protocols.seldon.parameters import parse_parameters
from inferd.storage.cache import cache_of

#: Methods that make a class a Seldon component.
COMPONENT_METHODS = (
    "predict",
    "predict_raw",
    "transform_input",
    "transform_input_raw",
    "transform_output",
    "transform_output_raw",
    "route",
    "route_raw",
    "aggregate",
    "aggregate_raw",
    "send_feedback",
)
CONFIGS = (".yaml", ".yml", ".json")
#: Seldon's environment variable → (inferd setting, converter).
ENVIRONMENT: EnvironmentTable = {
    "PREDICTIVE_UNIT_HTTP_SERVICE_PORT": ("port", int),
    "PREDICTIVE_UNIT_GRPC_SERVICE_PORT": ("grpc_port", int),
    "PREDICTIVE_UNIT_METRICS_SERVICE_PORT": ("metrics_port", int),
    "SERVICE_TYPE": ("service_type", str),
    "PREDICTIVE_UNIT_PARAMETERS": ("parameters", str),
    "GUNICORN_WORKERS": ("workers", int),
    "SELDON_LOG_LEVEL": ("log_level", str.lower),
}
#: seldon-core-microservice's ports when nothing says otherwise (its metrics port only when set: inferd
#: also serves metrics on the HTTP port).
DEFAULT_PORTS = {"port": 9000, "grpc_port": 5000}


def class_target(target: str) -> str:
    """``module:Class`` for Seldon's ways of naming the class."""
    if split_target(target)[1] is not None:
        return target
    if target.endswith(".py"):
        raise TargetError(f"'{target}' names a file; name the class: {target}:ClassName")
    module, _, attr = target.rpartition(".")
    return f"{module}:{attr}" if module else f"{target}:{target}"


def load_user_class(target: str) -> type:
    install_aliases()
    add_to_path(Path.cwd())
    found = import_from_string(class_target(target))
    if not inspect.isclass(found):
        raise TargetError(f"'{target}' is not a class; Seldon serves a class with predict(X, names)")
    return found


def looks_like_component(target: str) -> bool:
    """A class with a Seldon method that is not an `inferd.Model`; paths and config files are not."""
    module = split_target(target)[0]
    if ("/" in target and ":" not in target) or Path(module).is_dir() or Path(module).suffix in CONFIGS:
        return False
    try:
        found = load_user_class(target)
    except Exception:
        return False
    return not issubclass(found, Model) and any(callable(getattr(found, m, None)) for m in COMPONENT_METHODS)


def served_name(settings: SeldonSettings) -> str:
    return settings.name or split_target(class_target(settings.target))[1].lower()  # type: ignore[union-attr]


class SeldonDialect:
    name = "seldon"
    settings_type = SeldonSettings
    #: Not /health/status: it runs the component's own health_status, which is model code.
    health_paths: tuple[str, ...] = ("/health/ping",)

    def detect(self, target: str) -> bool:
        return looks_like_component(target)

    def settings_from_environment(self) -> dict[str, Any]:
        found = settings_from(ENVIRONMENT, DEFAULT_PORTS)
        if os.environ.get("GRPC_WORKERS") == "0":  # Seldon's way to turn gRPC off
            found["grpc_enabled"] = False
        return found

    def models(self, settings: SeldonSettings) -> list[ServedModel]:
        """The component; its parameters are checked before its class is imported, as
        seldon-core-microservice checks them, so a bad list is MICROSERVICE_BAD_PARAMETER whatever
        the class name says."""
        parameters = parse_parameters(settings.parameters)
        user_class = load_user_class(settings.target)
        parameters = prepackaged.fetched(user_class, parameters, cache_of(settings))

        name = served_name(settings)
        batching = batch_settings(settings, name, opt_in=True)

        def factory() -> Model:
            return SeldonModel(
                user_class, parameters, settings.service_type, settings.predict_in_thread, batching
            )

        return [ServedModel(name, factory, settings.model_version)]

    def seldon_component(
        self,
        target: str,
        parameters: dict[str, Any],
        service_type: str,
        predict_in_thread: PredictInThread,
        unit: tuple[str, str],
    ) -> Callable[[], Component]:
        """A component of a graph (`BuildsSeldonComponents`), built in each process that runs it."""
        user_class = load_user_class(target)
        return lambda: SeldonModel(user_class, parameters, service_type, predict_in_thread, unit=unit)

    def routes(self, dataplane: DataPlane, settings: SeldonSettings) -> list[BaseRoute]:
        return rest.routes(dataplane, served_name(settings), UploadLimits.of(settings))

    def grpc_services(self, dataplane: DataPlane, settings: SeldonSettings) -> list[Any]:
        return [grpc.registrar(dataplane, served_name(settings))]

    def metrics_routes(self) -> list[BaseRoute]:
        """The metrics port is seldon-core's metrics server: the Seldon series alone, at
        ``PREDICTIVE_UNIT_METRICS_ENDPOINT``; inferd's own stay on the HTTP port's ``/metrics``."""
        return rest.metrics_routes()

    def try_form(self, name: str, dataplane: DataPlane, settings: SeldonSettings) -> TryForm | None:
        """A Seldon message on the external predictions route; its ndarray has the declared input's
        shape when the component's metadata gives one."""
        inputs = dataplane.model_metadata(name).inputs
        rows = example_tensor(inputs[0]) if len(inputs) == 1 else None
        return TryForm("json", "/api/v1.0/predictions", {"data": {"ndarray": rows or [[1.0, 2.0]]}})


dialect = SeldonDialect()
