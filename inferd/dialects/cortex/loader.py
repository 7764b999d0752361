"""The Cortex dialect: a ``cortex.yaml`` (or a directory holding one) → one served model per API.

Everything that can be wrong with a project fails here, at startup, as a TargetError (exit code 2):
the config, models in object storage (``s3://``, ``gs://``, ``https://``) that cannot be fetched,
missing model files or SavedModels,
handler parameter names, and a missing onnxruntime or TensorFlow. A SavedModel's signature key is
checked when it loads (exit code 1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.errors import MissingExtra, ModelLoadError, TargetError
from inferd.core.importer import hide_file_names
from inferd.core.model import Model
from inferd.core.model_settings import batch_settings
from inferd.core.registry import ModelFactory
from inferd.core.requirements import pip_install
from inferd.core.settings import DialectSettings
from inferd.dialects.base import ServedModel, TryForm
from inferd.dialects.cortex import onnx, tensorflow
from inferd.dialects.cortex.adapter import CortexModel, OnnxApi, PredictorApi, TensorFlowApi
from inferd.dialects.cortex.config import ApiConfig, config_path, is_cortex_config, load_config
from inferd.dialects.cortex.handlers import load_handlers, load_predictor
from inferd.dialects.cortex.routes import all_routes
from inferd.storage.cache import cache_of
from inferd.storage.errors import StorageError

logger = logging.getLogger("inferd.cortex")


def factory_for(api: ApiConfig, settings: DialectSettings) -> ModelFactory:
    """Check the API now (startup errors) and return how each process builds its model."""
    api = fetched(api, settings)
    if api.model is not None and not api.model.exists():
        raise TargetError(f"api {api.name}: model {api.model}: no such file or directory")
    if api.format == "class":
        return _class_factory(api, settings)
    if api.format == "predictor":
        init, predict = load_predictor(api)
        return _configured(lambda: PredictorApi(api, init, predict), settings)
    if api.format == "tensorflow":
        tensorflow.require_tensorflow()
        assert api.model is not None
        try:
            tensorflow.check_model_path(api.model)
        except TargetError as exc:
            raise TargetError(f"api {api.name}: {exc}") from None
        handlers = load_handlers(api)
        return _configured(lambda: TensorFlowApi(api, handlers), settings)
    onnx.require_onnxruntime()
    handlers = load_handlers(api)
    batching = batch_settings(settings, api.name)
    return _configured(lambda: OnnxApi(api, handlers, batching), settings)


def _class_factory(api: ApiConfig, settings: DialectSettings) -> ModelFactory:
    """A 0.12-0.33 predictor class: its runtime required and its file checked now."""
    from inferd.dialects.cortex.adapter_classes import ClassApi
    from inferd.dialects.cortex.predictor_classes import load_predictor_class

    named = tuple(
        replace(
            model, model=fetched(replace(api, model_uri=model.model_uri, model=model.model), settings).model
        )
        for model in api.named_models
    )
    api = replace(api, named_models=named)
    paths = [model.model for model in named] if named else ([api.model] if api.model is not None else [])
    for path in paths:
        if path is None or not path.exists():
            raise TargetError(f"api {api.name}: model {path}: no such file or directory")
    if api.predictor_type == "onnx":
        onnx.require_onnxruntime()
    elif api.predictor_type == "tensorflow":
        tensorflow.require_tensorflow()
        for path in paths:
            assert path is not None
            try:
                tensorflow.check_model_path(path)
            except TargetError as exc:
                raise TargetError(f"api {api.name}: {exc}") from None
    predictor = load_predictor_class(api)
    return _configured(lambda: ClassApi(api, predictor), settings)


def fetched(api: ApiConfig, settings: DialectSettings) -> ApiConfig:
    """``api`` with its model in object storage fetched into the model cache (each worker asks; one
    downloads, the others wait for it), as Cortex downloaded it before serving."""
    if api.model_uri is None:
        return api
    try:
        found = cache_of(settings).fetch(api.model_uri)
    except MissingExtra as exc:  # exit 2, like every extra that is not installed
        raise MissingExtra(f"api {api.name}: {exc.message}", exc.extra) from None
    except StorageError as exc:  # exit 1, like a model that fails to load
        raise ModelLoadError(f"api {api.name}: {exc.message}") from None
    return replace(api, model=found.path)


def _configured(build: Callable[[], CortexModel], settings: DialectSettings) -> ModelFactory:
    def factory() -> Model:
        model = build()
        model.predict_in_thread = settings.predict_in_thread
        return model

    return factory


def install_requirements(project: Path) -> None:
    """pip-install the project's requirements.txt; like Cortex, a failure is logged and serving goes on."""
    requirements = project / "requirements.txt"
    if requirements.is_file():
        failure = pip_install(requirements)
        if failure:
            logger.error("%s", failure)


SAMPLE = "sample.json"


def read_sample(path: Path) -> Any:
    """The JSON of ``path``, or an empty object when there is none that parses."""
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


class CortexDialect:
    name = "cortex"
    settings_type = DialectSettings
    health_paths: tuple[str, ...] = ("/healthz",)

    def __init__(self) -> None:
        #: Parsed once per target, for the models and again for the routes.
        self._apis: dict[str, list[ApiConfig]] = {}

    def apis(self, target: str) -> list[ApiConfig]:
        if target not in self._apis:
            path = config_path(target)
            if not path.is_file():
                raise TargetError(f"no cortex.yaml at {target}")
            self._apis[target] = load_config(path)
        return self._apis[target]

    def detect(self, target: str) -> bool:
        return is_cortex_config(config_path(target))

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def models(self, settings: DialectSettings) -> list[ServedModel]:
        apis = self.apis(settings.target)
        if settings.install_requirements:
            install_requirements(apis[0].project_dir)
        hide_file_names(api.handler for api in apis if api.handler is not None)
        return [ServedModel(api.name, factory_for(api, settings), settings.model_version) for api in apis]

    def routes(self, dataplane: DataPlane, settings: DialectSettings) -> list[BaseRoute]:
        return all_routes(dataplane, self.apis(settings.target))

    def try_form(self, name: str, dataplane: DataPlane, settings: DialectSettings) -> TryForm | None:
        """A JSON sample posted to the API's endpoint; the project's ``sample.json`` (Cortex's examples
        each had one, for ``curl -d @sample.json``) is the one to start from."""
        api = next(api for api in self.apis(settings.target) if api.name == name)
        return TryForm("json", api.endpoint, read_sample(api.project_dir / SAMPLE))

    def grpc_services(self, dataplane: DataPlane, settings: DialectSettings) -> list[Any]:
        return []


dialect = CortexDialect()
