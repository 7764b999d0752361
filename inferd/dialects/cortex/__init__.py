"""Cortex 0.8 to 0.10 request-handler APIs (``cortex.yaml``) around ONNX models, over Cortex's own REST
protocol and V2. See ``shared/specs/cortex.md`` for the contract."""

from inferd.dialects.cortex.loader import dialect

__all__ = ["dialect"]
