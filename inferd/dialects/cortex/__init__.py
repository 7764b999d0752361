"""Cortex 0.8 to 0.10 request-handler APIs and predictors (``cortex.yaml``) around ONNX and TensorFlow
models, over Cortex's own REST protocol and V2. ``docs/dialects/cortex.md`` says what differs from Cortex."""
