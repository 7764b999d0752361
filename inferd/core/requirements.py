"""Installing a model project's ``requirements.txt`` (opt-in): the platforms did it at start-up."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

logger = logging.getLogger("inferd.requirements")


def pip_install(requirements: Path) -> str | None:
    """pip-install ``requirements`` into this interpreter; pip's error output when it fails, else None.
    pip's output is captured so it never reaches stdout (which carries the ready line)."""
    logger.info("installing %s", requirements)
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        return f"pip install -r {requirements} failed (exit code {done.returncode}):\n{done.stderr.strip()}"
    logger.info("installed %s", requirements)
    return None
