"""Test stand-in for stevedore: deepaas 2.6.0 imports it, and only calls it when deepaas-run loads
models (see ../README.md)."""
