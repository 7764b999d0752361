"""inferd: a self-hosted model server for Seldon, DEEPaaS, Cortex, ABEJA and native model code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferd.core.lazy import lazy_names

if TYPE_CHECKING:
    from inferd.config.settings import Settings
    from inferd.core.model import Model
    from inferd.core.sequences import SequenceModel
    from inferd.core.types import InferenceRequest, InferenceResponse, TensorSpec

__version__ = "0.1.0"

__all__ = [
    "InferenceRequest",
    "InferenceResponse",
    "Model",
    "SequenceModel",
    "Settings",
    "TensorSpec",
    "__version__",
]

# Where each public name lives: imported on first use, so `inferd --help` and `import inferd.cli` do
# not load numpy and pydantic.
__getattr__ = lazy_names(
    __name__,
    {
        "Model": "inferd.core.model",
        "SequenceModel": "inferd.core.sequences",
        "Settings": "inferd.config.settings",
        "InferenceRequest": "inferd.core.types",
        "InferenceResponse": "inferd.core.types",
        "TensorSpec": "inferd.core.types",
    },
)
