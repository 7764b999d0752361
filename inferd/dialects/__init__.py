"""One room per handler convention, reached through import strings so optional dependencies load
only when their dialect is chosen. Dialects never import one another (lint-imports checks it): the
graph dialect, which composes them, reaches each through `get_dialect` and speaks Seldon's wire format
through `inferd.protocols.seldon`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferd.core.errors import TargetError
from inferd.core.importer import import_from_string, split_target
from inferd.dialects.base import Dialect

#: Dialect name → import string of its `Dialect` object. Auto-detection tries them in this order.
DIALECTS: dict[str, str] = {
    "native": "inferd.dialects.native.loader:dialect",
    "deepaas": "inferd.dialects.deepaas.loader:dialect",
    "seldon": "inferd.dialects.seldon.loader:dialect",
    "graph": "inferd.dialects.graph.loader:dialect",
    "cortex": "inferd.dialects.cortex.loader:dialect",
    "abeja": "inferd.dialects.abeja.loader:dialect",
    # A model file in a known format (model.joblib, model.onnx...), or a folder holding one.
    "runtimes": "inferd.dialects.runtimes.loader:dialect",
    # Last: a folder is a repository only when no dialect serves it as a model or project of its own.
    "repository": "inferd.dialects.repository.loader:dialect",
}

FILE_SUFFIXES = (".py", ".yaml", ".yml", ".json")


def get_dialect(name: str) -> Dialect[Any]:
    if name not in DIALECTS:
        raise TargetError(f"dialect '{name}' is not available here; choose one of {sorted(DIALECTS)}")
    dialect: Dialect[Any] = import_from_string(DIALECTS[name])
    return dialect


def detect(target: str) -> Dialect[Any]:
    """The dialect whose convention ``target`` follows, or a TargetError listing what was expected."""
    path = Path(split_target(target)[0])
    if ("/" in target or path.suffix in FILE_SUFFIXES) and not path.exists():
        raise TargetError(f"no such file or directory: {path}")
    for name in DIALECTS:
        dialect = get_dialect(name)
        if dialect.detect(target):
            return dialect
    if split_target(target)[1] and path.suffix == ".py":
        import_from_string(target)  # a file lacking the class named: says which classes it has
    raise TargetError(
        f"cannot tell what '{target}' is; expected path/to/model.py:Class (a subclass of inferd.Model), "
        "a module:Class, a directory with a model.py, a DEEPaaS model (module:Class with get_predict_args), "
        "a Seldon component class (MyModel or module:Class), "
        "a graph file (a SeldonDeployment or inferd's graph form), a cortex.yaml, an ABEJA module:handler, "
        "a model file (model.joblib, model.pkl, model.pickle, model.bst, model.json, model.ubj, model.txt, "
        "model.onnx) or a folder holding one, "
        "a model repository (a folder of model folders with inferd.yaml or model-settings.json); "
        "or pass --dialect"
    )


def resolve_dialect(name: str, target: str) -> Dialect[Any]:
    return detect(target) if name == "auto" else get_dialect(name)
