"""inferd: a self-hosted model server for Seldon, DEEPaaS, Cortex, ABEJA and native model code."""

from inferd.core.model import Model
from inferd.core.settings import Settings
from inferd.core.types import InferenceRequest, InferenceResponse, TensorSpec

__version__ = "0.1.0"

__all__ = ["InferenceRequest", "InferenceResponse", "Model", "Settings", "TensorSpec", "__version__"]
