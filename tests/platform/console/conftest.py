"""A real control process (``inferd platform serve``) for the console's tests, with the environment
each test gives it (a token, for the sign-in), and the model project its services run: a native
model whose answer says which service answered (``FACTOR``, from the service's environment)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.platform.control import Control, native_project


def project(folder: Path) -> Path:
    """A native model answering ``x * FACTOR``, FACTOR from its service's environment."""
    return native_project(
        folder,
        "scale",
        """
            import os

            import inferd

            class Scale(inferd.Model):
                def predict(self, inputs):
                    return {"y": inputs["x"] * float(os.environ.get("FACTOR", "1"))}
        """,
    )


def push(running: Control, deployment: str, folder: Path, label: str) -> str:
    pushed = running.verb("push", deployment, str(folder), "--label", label, "--json")
    assert pushed.returncode == 0, pushed.stderr
    return str(json.loads(pushed.stdout)["id"])
