"""The DEEPaaS dialect: models from the ``deepaas.v2.model`` entry-point group, as ``deepaas-run``
found them, or a ``module`` / ``module:attr`` target for code that is not installed as a package
(`discovery` finds them).

``--model-name`` (or ``DEEPAAS_V2_MODEL``) picks one entry point; without it every entry point is
served side by side under its name. ``deepaas-test`` names the built-in test model.

Auto-detection imports this module for every target: what needs the deepaas extra (`extra`) is
imported once a DEEPaaS model is served, never at the top.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.errors import MissingExtra, TargetError
from inferd.core.model import Model
from inferd.dialects.base import EnvironmentTable, ServedModel, TryForm, settings_from
from inferd.dialects.deepaas import extra
from inferd.dialects.deepaas.discovery import discover, load_target
from inferd.dialects.deepaas.settings import DeepaasSettings

#: Methods that make an object a DEEPaaS model (a Seldon class has ``predict`` too).
MODEL_METHODS = ("get_metadata", "get_predict_args", "get_train_args")
#: DEEPaaS's environment variables (oslo.config's OS_DEFAULT__<OPTION>) → inferd settings.
ENVIRONMENT: EnvironmentTable = {
    "DEEPAAS_V2_MODEL": ("model_name", str),
    "OS_DEFAULT__MODEL_NAME": ("model_name", str),
    "OS_DEFAULT__LISTEN_IP": ("host", str),
    "OS_DEFAULT__LISTEN_PORT": ("port", int),
    "OS_DEFAULT__WORKERS": ("workers", int),
    "OS_DEFAULT__BASE_PATH": ("base_path", str),
}
DEFAULT_PORT = 5000
MIN_APISPEC = 6


def check_libraries() -> None:
    """Installing deepaas 2.x beside inferd (models often list it in their requirements) downgrades
    apispec to 3 through aiohttp-apispec; inferd's Swagger document needs apispec 6, so say so at
    start-up rather than fail on the first ``/swagger.json``. (webargs 5, which comes along too, is
    fine: inferd parses arguments itself and models only take marshmallow fields from it.)"""
    version = metadata.version("apispec")
    if int(version.split(".")[0]) < MIN_APISPEC:
        raise TargetError(
            f"apispec {version} is installed (deepaas 2.x pulls apispec<4 in through aiohttp-apispec), "
            f"but inferd needs apispec>={MIN_APISPEC}: run pip install 'apispec>={MIN_APISPEC}', or leave "
            "deepaas out of the environment (inferd provides its BaseModel and UploadedFile), or install "
            "it with pip install --no-deps deepaas"
        )


def looks_like_model(target: str) -> bool:
    if not target or "/" in target or Path(target).suffix:
        return False
    try:
        found = load_target(target)
    except ImportError as exc:
        if extra.needed_by(exc):  # model code importing webargs, say, without the deepaas extra
            raise MissingExtra(
                f"{target} imports {exc.name}: {MissingExtra.install(extra.EXTRA)}", extra.EXTRA
            ) from None
        return False
    except Exception:
        return False
    if inspect.isclass(found) and issubclass(found, Model):
        return False
    return any(callable(getattr(found, method, None)) for method in MODEL_METHODS)


class DeepaasDialect:
    name = "deepaas"
    settings_type = DeepaasSettings
    #: DEEPaaS has no health route of its own; probes use V2's /v2/health/ready.
    health_paths: tuple[str, ...] = ()

    def detect(self, target: str) -> bool:
        return looks_like_model(target)

    def settings_from_environment(self) -> dict[str, Any]:
        return settings_from(ENVIRONMENT, {"port": DEFAULT_PORT})

    def models(self, settings: DeepaasSettings) -> list[ServedModel]:
        if settings.base_path and not settings.base_path.startswith("/"):
            raise TargetError(f"--base-path must start with '/': {settings.base_path!r}")
        extra.require()
        check_libraries()
        return [
            ServedModel(name, _factory(name, load, settings), settings.model_version)
            for name, load in discover(settings).items()
        ]

    def routes(self, dataplane: DataPlane, settings: DeepaasSettings) -> list[BaseRoute]:
        from inferd.dialects.deepaas import rest

        return rest.routes(dataplane, settings)

    def grpc_services(self, dataplane: DataPlane, settings: DeepaasSettings) -> list[Any]:
        return []

    def try_form(self, name: str, dataplane: DataPlane, settings: DeepaasSettings) -> TryForm | None:
        """The predict route's arguments, as its Swagger document describes them."""
        from inferd.dialects.deepaas.model import DeepaasModel

        model = dataplane.registry.get(name)
        assert isinstance(model, DeepaasModel)
        base = settings.base_path.rstrip("/")
        return TryForm("fields", f"{base}/v2/models/{name}/predict/", fields=model.predict_parameters(base))


def _factory(name: str, load: Callable[[], Any], settings: DeepaasSettings) -> Callable[[], Model]:
    def build() -> Model:
        from inferd.dialects.deepaas.model import DeepaasModel

        return DeepaasModel(name, load, settings.warm, settings.predict_in_thread)

    return build


dialect = DeepaasDialect()
