"""Test stand-in for oslo.config (see ../README.md)."""
