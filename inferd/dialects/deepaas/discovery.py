"""Where DEEPaaS models come from: the ``deepaas.v2.model`` entry-point group, as ``deepaas-run``
found them, or a ``module`` / ``module:attr`` target for code that is not installed as a package.

A module of its own because both the dialect (`loader`) and a training job's process (`training`)
load models, and the dialect reaches training through its routes.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from inferd.core.errors import ModelLoadError, TargetError
from inferd.core.importer import add_to_path, import_from_string, split_target
from inferd.dialects.deepaas import stand_in
from inferd.dialects.deepaas.settings import TEST_MODEL, DeepaasSettings

logger = logging.getLogger("inferd.deepaas")

GROUP = "deepaas.v2.model"
HOW_TO_REGISTER = (
    f"register one in the '{GROUP}' entry-point group (pyproject.toml: "
    f'[project.entry-points."{GROUP}"] mymodel = "mypackage.model:MyModel", then pip install it), '
    "or serve it directly: inferd serve mypackage.model:MyModel --dialect deepaas "
    f"(--model-name {TEST_MODEL} serves the built-in test model)"
)


def prepare_imports() -> None:
    """Before model code is imported. DEEPaaS models declare fields the webargs 5 way (``missing=``,
    ``location=``, ``description=``), which marshmallow 3 still takes with a deprecation warning per
    declaration; inferd supports that style on purpose, so the warnings are only noise in the model's
    log. And they import deepaas's ``BaseModel`` and ``UploadedFile``, which resolve to inferd's
    equivalents when deepaas is not installed (`stand_in`). (marshmallow is imported here, not at the
    top: detection runs this for every ``module:attr`` target, and the deepaas extra may be absent.)"""
    try:
        from marshmallow.warnings import RemovedInMarshmallow4Warning
    except ImportError:  # no extra: whether the target is a DEEPaaS model is still asked (`loader`)
        pass
    else:
        warnings.filterwarnings("ignore", category=RemovedInMarshmallow4Warning)
    stand_in.install_aliases()


def entry_points() -> dict[str, metadata.EntryPoint]:
    return {point.name: point for point in metadata.entry_points(group=GROUP)}


def _test_model() -> Any:
    from inferd.dialects.deepaas import test_model

    return test_model.TestModel


def _loadable(name: str, load: Callable[[], Any]) -> Callable[[], Any] | None:
    """``load`` if the entry point imports here (failures are logged and skipped, as upstream)."""
    try:
        load()
    except Exception:
        logger.exception("model '%s' of '%s' failed to load; it is not served", name, GROUP)
        return None
    return load


def discover(settings: DeepaasSettings) -> dict[str, Callable[[], Any]]:
    """Served name → how to load the model's object, in each process."""
    prepare_imports()
    if settings.target:
        target = settings.target
        name = settings.name or (split_target(target)[1] or target.rsplit(".", 1)[-1]).lower()
        return {name: lambda: load_target(target)}
    points = entry_points()
    wanted = settings.model_name
    if wanted == TEST_MODEL and wanted not in points:
        return {wanted: _test_model}
    if wanted:
        point = points.get(wanted)
        found = _loadable(wanted, point.load) if point is not None else None
        if found is None:
            raise ModelLoadError(f"Model '{wanted}' not found in namespace '{GROUP}'")
        return {wanted: found}
    models = {name: load for name, point in points.items() if (load := _loadable(name, point.load))}
    if not models:
        raise TargetError(f"no DEEPaaS model found: {HOW_TO_REGISTER}")
    if len(models) > 1:
        logger.warning("Loading several models is deprecated: %s", ", ".join(models))
    return models


def load_target(target: str) -> Any:
    prepare_imports()
    add_to_path(Path.cwd())
    return import_from_string(target)
