"""Test stand-in for oslo.log (see ../README.md)."""
