"""inferd: a self-hosted model server for Seldon, DEEPaaS, Cortex, ABEJA and native model code."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferd.config.settings import Settings
    from inferd.core.model import Model
    from inferd.core.types import InferenceRequest, InferenceResponse, TensorSpec

__version__ = "0.1.0"

__all__ = ["InferenceRequest", "InferenceResponse", "Model", "Settings", "TensorSpec", "__version__"]

# Where each public name lives: imported on first use (PEP 562), so `inferd --help` and `import
# inferd.cli` do not load numpy and pydantic.
_PUBLIC = {
    "Model": "inferd.core.model",
    "Settings": "inferd.config.settings",
    "InferenceRequest": "inferd.core.types",
    "InferenceResponse": "inferd.core.types",
    "TensorSpec": "inferd.core.types",
}


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'inferd' has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value
