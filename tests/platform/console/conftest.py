"""A real control process (``inferd platform serve``) for the console's tests, with the environment
each test gives it (a token, for the sign-in), and the model project its services run: a native
model whose answer says which service answered (``FACTOR``, from the service's environment)."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.platform.test_control import READY, Control
from tests.servers import ROOT, inferd_command, with_this_tree


@contextmanager
def control(data: Path, env: dict[str, str] | None = None) -> Iterator[Control]:
    command = inferd_command(
        "platform",
        "serve",
        "--port",
        "0",
        "--gateway-port",
        "0",
        "--grpc-gateway-port",
        "0",
        "--data-dir",
        str(data),
    )
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=with_this_tree({"PATH": "/usr/bin:/bin", **(env or {})}),
        cwd=ROOT,
    )
    assert process.stdout is not None
    drain = threading.Thread(target=process.stdout.read, daemon=True)
    try:
        for line in process.stdout:
            match = READY.search(line)
            if match:
                break
        else:
            raise AssertionError(f"the control process exited with {process.wait()}")
        drain.start()
        yield Control(process, match["api"], match["gateway"], match["grpc"])
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        if drain.is_alive():
            drain.join(10)
        process.stdout.close()


def project(folder: Path) -> Path:
    """A native model answering ``x * FACTOR``, FACTOR from its service's environment."""
    folder.mkdir(parents=True)
    (folder / "inferd.yaml").write_text("name: scale\n")
    (folder / "model.py").write_text(
        textwrap.dedent("""
            import os

            import inferd

            class Scale(inferd.Model):
                def predict(self, inputs):
                    return {"y": inputs["x"] * float(os.environ.get("FACTOR", "1"))}
        """)
    )
    return folder


def push(running: Control, deployment: str, folder: Path, label: str) -> str:
    pushed = running.verb("push", deployment, str(folder), "--label", label, "--json")
    assert pushed.returncode == 0, pushed.stderr
    return str(json.loads(pushed.stdout)["id"])
