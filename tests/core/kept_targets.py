"""Targets for tests/core/test_keeper.py; module-level so a ``spawn`` child can import them."""

from __future__ import annotations

import signal
import time
from multiprocessing.synchronize import Event


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def ignore_sigterm(seconds: float, ready: Event) -> None:
    """A process that will not stop when asked, as user code stuck in C might be."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    time.sleep(seconds)


def hold_memory(mib: int, seconds: float) -> None:
    held = b"x" * (mib * 1024 * 1024)  # written, so resident
    time.sleep(seconds)
    del held
