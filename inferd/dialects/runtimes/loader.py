"""The model-file runtimes' dialect: ``inferd serve model.joblib`` (or a folder holding one of the
files `formats` knows) serves the model with no code, over V2 and V1 only (the formats have no wire
protocol of their own). A missing library is a TargetError with the ``pip install`` line; an unknown
file one naming what was looked for."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.batching import batched
from inferd.core.dataplane import DataPlane
from inferd.core.errors import TargetError
from inferd.core.importer import split_target
from inferd.core.model import Model
from inferd.core.model_settings import batch_settings
from inferd.dialects.base import ServedModel, TryForm
from inferd.dialects.runtimes.formats import FileFormat, find, installed, model_file
from inferd.dialects.runtimes.settings import RuntimeSettings

logger = logging.getLogger("inferd.runtimes")


def served_name(path: Path, formats: list[FileFormat]) -> str:
    """A well-known file (``model.joblib``) is named after its folder (a SavedModel in a version
    folder ``1/`` after the folder holding that); another after its stem."""
    known = any(path.name in found.files for found in formats)
    if not known:
        return path.stem
    folder = path.resolve().parent
    return folder.parent.name if formats[0].name == "tensorflow" and folder.name.isdigit() else folder.name


class RuntimesDialect:
    name = "runtimes"
    settings_type = RuntimeSettings
    health_paths: tuple[str, ...] = ()

    def detect(self, target: str) -> bool:
        module, attribute = split_target(target)
        if attribute is not None:
            return False
        try:
            return find(module, None) is not None
        except TargetError:
            return True  # a folder of several model files: `models` says which

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def models(self, settings: RuntimeSettings) -> list[ServedModel]:
        path, formats = model_file(settings.target, settings.model_format)
        formats = installed(path, formats)
        name = settings.name or served_name(path, formats)
        if formats[0].name == "mlflow":
            from inferd.dialects.frameworks.mlflow import check

            check(path)
        if formats[0].name == "sklearn":
            logger.info("loading %s: a pickle runs code of its own; serve only files you trust", path)
        return [ServedModel(name, _factory(path, formats, settings, name), settings.model_version)]

    def routes(self, dataplane: DataPlane, settings: RuntimeSettings) -> list[BaseRoute]:
        return []

    def grpc_services(self, dataplane: DataPlane, settings: RuntimeSettings) -> list[Any]:
        return []

    def try_form(self, name: str, dataplane: DataPlane, settings: RuntimeSettings) -> TryForm | None:
        return None  # tried over V2


def _factory(path: Path, formats: list[FileFormat], settings: RuntimeSettings, name: str) -> Any:
    batching = batch_settings(settings, name)
    method = settings.predict_method

    def build() -> Model:
        model: Model
        if formats[0].name == "onnx":
            from inferd.dialects.runtimes.onnx import OnnxModel

            model = OnnxModel(path, settings.triton_config)
        elif formats[0].name == "tensorflow":
            from inferd.dialects.runtimes.tensorflow import SavedModelModel

            model = SavedModelModel(path, settings.signature_key, settings.triton_config)
        else:
            from inferd.dialects.runtimes.model import FileModel

            model = FileModel(path, formats, method)
        model.predict_in_thread = settings.predict_in_thread
        return batched(model, batching)

    return build


dialect = RuntimesDialect()
