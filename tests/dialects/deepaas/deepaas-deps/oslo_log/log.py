"""What deepaas 2.6.0 uses of oslo.log at import: its loggers."""

from __future__ import annotations

from logging import getLogger

__all__ = ["getLogger"]
