"""What ``cortex.lib.log`` offered handler code, so ``from cortex.lib.log import get_logger`` (0.8 to 0.10.0)
and ``cx_logger`` (0.10.1+) work unchanged.

`install` registers this module as ``cortex.lib.log`` (with empty ``cortex`` and ``cortex.lib`` parents)
unless a real ``cortex`` package is importable. Records go to the ``cortex`` logger and so through
inferd's own log handler (JSON lines on stderr), not Cortex's plain stdout format.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from types import ModuleType

logger = logging.getLogger("cortex")


def get_logger() -> logging.Logger:
    return logger


def cx_logger() -> logging.Logger:
    return logger


def install() -> None:
    if "cortex.lib.log" in sys.modules or importlib.util.find_spec("cortex") is not None:
        return
    package, lib = ModuleType("cortex"), ModuleType("cortex.lib")
    package.__path__, lib.__path__ = [], []
    package.__dict__["lib"], lib.__dict__["log"] = lib, sys.modules[__name__]
    sys.modules.update({"cortex": package, "cortex.lib": lib, "cortex.lib.log": sys.modules[__name__]})
