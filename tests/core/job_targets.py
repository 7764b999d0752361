"""Job targets for tests/core/test_jobs.py; module-level so a ``spawn`` child can import them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class Unpicklable(Exception):
    """An exception that cannot cross a process boundary: it holds a lock-like object."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.handle = lambda: None  # lambdas cannot be pickled


def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b, "big": "x" * 1_000_000}


def raise_value_error() -> None:
    raise ValueError("the learning rate must be positive")


def raise_unpicklable() -> None:
    raise Unpicklable("weights could not be read")


def exit_hard(code: int) -> None:
    os._exit(code)


def announce(started: Path, text: str) -> None:
    """``started`` appears with ``text`` in it, whole: a test waiting for the file to exist never
    reads it empty (written beside it, then renamed)."""
    partial = started.with_name(started.name + ".partial")
    partial.write_text(text)
    partial.rename(started)


def sleep(seconds: float, started: Path | None = None) -> str:
    if started is not None:
        announce(started, str(os.getpid()))
    time.sleep(seconds)
    return "slept"


def return_object() -> object:
    return {1, 2}


def sleep_with_child(seconds: float, started: Path) -> None:
    """Sleep with a subprocess of its own, as a training script started with ``subprocess`` would."""
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    announce(started, f"{os.getpid()} {child.pid}")
    child.wait()


def open_store(path: str, start: Any) -> None:
    """Open the job store at ``path`` when every process is ready (``start``, a Barrier), as the
    workers of one server do, and close it."""
    from inferd.core.jobs import JobStore

    start.wait()
    JobStore(Path(path)).close()
