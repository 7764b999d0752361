"""Headless Chromium for tests of pages that need a real browser (JavaScript UIs): Debian's ``chromium``
run once per page with ``--dump-dom``, after letting the page's scripts run for a virtual time budget.

Chromium only reaches 127.0.0.1 in the test environment, so pages under test must be self-contained.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def chromium() -> str:
    """Chromium's executable ($CHROMIUM, else on PATH); a test that needs it fails without it, since
    skipping would hide the missing browser in CI."""
    wanted = os.environ.get("CHROMIUM")
    found = shutil.which(wanted) if wanted else next(filter(None, map(shutil.which, NAMES)), None)
    if not found:
        pytest.fail("headless Chromium is needed: apt-get install chromium (or set $CHROMIUM)")
    return found


def run(url: str, *flags: str, budget_ms: int = 10_000, timeout: float = 60) -> str:
    """Chromium's stdout for ``url`` with ``flags``; JavaScript runs for up to ``budget_ms`` of virtual
    time (fetches pause the clock, so the budget is an upper bound, not a wait)."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            *flags,
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def dump_dom(url: str, *, budget_ms: int = 10_000) -> str:
    """The page's DOM, serialised after its scripts ran."""
    return run(url, "--dump-dom", budget_ms=budget_ms)


def screenshot(url: str, name: str, *, size: tuple[int, int] = (1280, 1600), budget_ms: int = 10_000) -> Path:
    """A PNG of the rendered page, kept as a test artifact under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    run(url, f"--screenshot={path}", f"--window-size={size[0]},{size[1]}", budget_ms=budget_ms)
    if not path.is_file():
        pytest.fail(f"chromium wrote no screenshot to {path}")
    return path
