"""Model-format readers shared by several dialects (a room may not import another): what a
TensorFlow SavedModel or a Triton ``config.pbtxt`` declares, read once for the Cortex room, the
model-file runtimes and Seldon's prepackaged servers."""
