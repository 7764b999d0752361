"""inferd's stand-ins for the seldon-core modules user code imports, so seldon-core is never required.

`install_aliases` makes ``seldon_core.user_model``, ``flask_utils``, ``utils``, ``metrics``,
``proto.prediction_pb2`` / ``prediction_pb2_grpc`` and ``seldon_client`` importable: the installed
seldon-core's own modules when they all import, else inferd's equivalents (seldon-core 1.18 pins
protobuf below 4, so its generated code usually does not load beside inferd). The client stand-in is
loaded on first use, so serving a component does not pay for its HTTP client.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from inferd.core.importer import stand_in_modules
from inferd.dialects.seldon import user_model
from inferd.dialects.seldon.stand_in import metrics, utils
from inferd.protocols.seldon._generated import prediction_pb2, prediction_pb2_grpc

CLIENT = "inferd.dialects.seldon.stand_in.seldon_client"


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed on its first attribute access (`importlib.util.LazyLoader`)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, name
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def install_aliases() -> None:
    """Make the seldon-core module paths user code imports resolve (see the module docstring)."""
    stand_in_modules(
        {
            "seldon_core.user_model": user_model,
            "seldon_core.flask_utils": user_model,
            "seldon_core.utils": utils,
            "seldon_core.metrics": metrics,
            "seldon_core.proto.prediction_pb2": prediction_pb2,
            "seldon_core.proto.prediction_pb2_grpc": prediction_pb2_grpc,
            "seldon_core.seldon_client": lazy_module(CLIENT),
        },
        user_model.logger,
        "seldon-core",
    )
