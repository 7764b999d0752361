"""The protocol-free runtime: types, models, registry, data plane, settings."""
