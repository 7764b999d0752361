"""Finding the user's handler and telling its style apart, as the ABEJA runtimes loaded it.

``HANDLER`` (or the serve target) is ``module:function``, imported with the model root (the working
dir, or ``ABEJA_USER_MODEL_ROOT``) first on ``sys.path``. The style is the override when given, else:
a first parameter named ``request``/``req`` → 19.04; one whose name holds ``iter`` → 18.10; a
generator function → 18.10; anything else → 19.04.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inferd.core.errors import TargetError
from inferd.core.importer import add_to_path, import_from_string, split_target

Style = Literal["18.10", "19.04"]
DEFAULT_HANDLER = "main:handler"
TRAINING_RESULT_DIR = "abejainc_training_result"


@dataclass(frozen=True)
class Handler:
    target: str
    function: Callable[..., Any]
    style: Style


def handler_target(target: str) -> str:
    """The serve target, else ``HANDLER``, else ``main:handler``; exactly one ``:``."""
    chosen = target or os.environ.get("HANDLER") or DEFAULT_HANDLER
    module, attr = split_target(chosen)
    if attr is None or ":" in module:
        raise TargetError(f"handler '{chosen}' must be module:function, e.g. {DEFAULT_HANDLER}")
    return chosen


def model_root() -> Path:
    return Path(os.environ.get("ABEJA_USER_MODEL_ROOT") or ".").resolve()


def prepare_environment() -> None:
    """What the ABEJA runtime did before importing user code: the model root as working dir and first
    on sys.path, and ``ABEJA_TRAINING_RESULT_DIR`` made absolute (user code loads models from it)."""
    root = model_root()
    os.chdir(root)
    add_to_path(root)
    result_dir = os.environ.get("ABEJA_TRAINING_RESULT_DIR") or TRAINING_RESULT_DIR
    os.environ["ABEJA_TRAINING_RESULT_DIR"] = str((root / result_dir).resolve())


def load_handler(target: str, override: str = "auto") -> Handler:
    prepare_environment()
    chosen = handler_target(target)
    function = import_from_string(chosen)
    if not callable(function):
        raise TargetError(f"handler '{chosen}' is not a function")
    return Handler(chosen, function, detect_style(function) if override == "auto" else _style(override))


def detect_style(function: Callable[..., Any]) -> Style:
    try:
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        parameters = []
    first = parameters[0] if parameters else ""
    if first in ("request", "req"):
        return "19.04"
    if "iter" in first:
        return "18.10"
    return "18.10" if inspect.isgeneratorfunction(function) else "19.04"


def _style(value: str) -> Style:
    if value not in ("18.10", "19.04"):
        raise TargetError(f"ABEJA style must be 18.10 or 19.04, not '{value}'")
    return "18.10" if value == "18.10" else "19.04"


def looks_like_handler(target: str) -> bool:
    """Cheap auto-detection: a ``module:function`` whose function takes two parameters."""
    if split_target(target)[1] is None:
        return False
    try:
        add_to_path(model_root())
        function = import_from_string(target)
        return inspect.isfunction(function) and len(inspect.signature(function).parameters) == 2
    except Exception:
        return False
