"""Find the user's `inferd.Model` subclasses in a target.

``file.py:Class`` or ``module:Class`` serves that class; a ``.py`` file or module serves every
subclass it defines (each under its lower-cased class name); a directory serves its ``model.py``,
under the directory's name when it holds one model.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.batching import batched
from inferd.core.dataplane import DataPlane
from inferd.core.errors import TargetError
from inferd.core.importer import import_from_string, split_target
from inferd.core.model import Model
from inferd.core.model_settings import batch_settings
from inferd.core.sequences import SequenceModel
from inferd.core.settings import DialectSettings
from inferd.dialects.base import ServedModel, TryForm

Found = list[tuple[str, type[Model]]]


def find_model_classes(target: str) -> Found:
    """(default served name, class) for each Model subclass ``target`` names."""
    module, attr = split_target(target)
    path = Path(module)
    if path.is_dir():
        found = _subclasses_in(str(path / "model.py"))
        return [(path.resolve().name, found[0][1])] if len(found) == 1 else found
    if attr is None:
        return _subclasses_in(module)
    obj = import_from_string(target)
    if not (inspect.isclass(obj) and issubclass(obj, Model)):
        raise TargetError(f"'{target}' is not a subclass of inferd.Model")
    return [(obj.__name__.lower(), obj)]


def _subclasses_in(module: str) -> Found:
    namespace = import_from_string(module)
    found = [
        (value.__name__.lower(), value)
        for value in vars(namespace).values()
        if inspect.isclass(value) and issubclass(value, Model) and value.__module__ == namespace.__name__
    ]
    if not found:
        raise TargetError(f"'{module}' defines no subclass of inferd.Model")
    return found


class NativeDialect:
    name = "native"
    settings_type = DialectSettings
    health_paths: tuple[str, ...] = ()

    def detect(self, target: str) -> bool:
        try:
            find_model_classes(target)
        except TargetError:
            return False
        return True

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def models(self, settings: DialectSettings) -> list[ServedModel]:
        found = find_model_classes(settings.target)
        if settings.name and len(found) > 1:
            raise TargetError(f"--name needs a target with one model; '{settings.target}' has {len(found)}")
        return [
            ServedModel(served, _factory(cls, settings, served), settings.model_version)
            for served, cls in ((settings.name or name, cls) for name, cls in found)
        ]

    def routes(self, dataplane: DataPlane, settings: DialectSettings) -> list[BaseRoute]:
        return []

    def grpc_services(self, dataplane: DataPlane, settings: DialectSettings) -> list[Any]:
        return []

    def try_form(self, name: str, dataplane: DataPlane, settings: DialectSettings) -> TryForm | None:
        return None  # V2 is the native protocol


def _factory(cls: type[Model], settings: DialectSettings, name: str) -> Any:
    """Builds the model in each process, behind a batcher when its settings ask for one."""
    batching = batch_settings(settings, name)

    def build() -> Model:
        model = cls()
        model.predict_in_thread = settings.predict_in_thread
        if isinstance(model, SequenceModel):  # rows of several sequences are not batched together
            model.sequence_idle_timeout = settings.sequence_idle_timeout
            model.max_sequences = settings.max_sequences
            return model
        return batched(model, batching)

    return build


dialect = NativeDialect()
