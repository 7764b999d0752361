"""Inference graphs with Seldon's semantics: transformers, models, routers, combiners and output
transformers of any dialect, local or on other servers, run by inferd's own executor."""
