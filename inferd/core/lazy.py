"""Names a package exports but imports on first use (PEP 562), so importing the package stays light:
``inferd`` itself (``inferd --help`` loads no numpy or pydantic) and ``inferd.storage`` (a server of
local models loads no model cache)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``homes`` imported from the module there on
    first use, then kept in the package like any other name."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
