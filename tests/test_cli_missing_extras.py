"""An optional part of inferd that is not installed ends ``inferd serve`` the same way whatever needs
it (issue 43 item 10): exit code 2 and the ``pip install 'inferd[...]'`` line that adds it. ONNX
ended with 2, s3:// and gs:// with 1 (a failed fetch) and the ray engine with 1 (an engine error),
so a script could not tell "install something" from "the bucket is wrong".

The libraries are installed here; each command runs the real CLI in a Python where the extra's
library cannot be imported (``sys.modules[name] = None``: ``import`` raises ImportError and
``importlib.util.find_spec`` finds nothing, as when it is not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import IRIS
from tests.servers import ROOT, with_this_tree

#: The CLI as ``python -m inferd`` runs it, after hiding the libraries named in its first argument.
WITHOUT = (
    "import runpy, sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "sys.argv = ['inferd', *sys.argv[2:]]\n"
    "runpy.run_module('inferd', run_name='__main__', alter_sys=True)\n"
)


def serve_without(libraries: str, target: str, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", WITHOUT, libraries, "serve", target, "--port", "0", *options]
    env = with_this_tree({**os.environ, "COLUMNS": "200"})
    env.pop("AWS_ENDPOINT_URL", None)
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def cortex_project(folder: Path, model: str) -> Path:
    """A Cortex 0.8 project of one ONNX API (the model file's content is never read: the missing
    library is found first)."""
    folder.mkdir()
    (folder / "cortex.yaml").write_text(
        textwrap.dedent(f"""
            - kind: deployment
              name: adder
            - kind: api
              name: adder
              model: {model}
              model_format: onnx
        """)
    )
    (folder / "adder.onnx").write_bytes(b"not read")
    return folder


@pytest.mark.parametrize(
    ("libraries", "target", "extra"),
    [
        ("onnxruntime", "cortex-onnx", "onnx"),
        ("s3fs", "s3://models/iris", "s3"),
        ("s3fs", "cortex-s3", "s3"),
        ("gcsfs", "gs://models/iris", "gcs"),
        ("ray", "ray-engine", "ray"),
    ],
    ids=["onnx", "s3-target", "s3-cortex-model", "gcs-target", "ray-engine"],
)
def test_a_missing_extra_exits_2_with_its_install_line(
    libraries: str, target: str, extra: str, tmp_path: Path
) -> None:
    if target == "cortex-onnx":
        target = str(cortex_project(tmp_path / "project", "adder.onnx") / "cortex.yaml")
    elif target == "cortex-s3":
        target = str(cortex_project(tmp_path / "project", "s3://models/adder.onnx") / "cortex.yaml")
    options = ["--grpc-port", "0"]
    if target == "ray-engine":
        target, options = str(IRIS), ["--engine", "ray"]
    started = time.monotonic()
    done = serve_without(libraries, target, tmp_path, *options)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, said
    assert f"pip install 'inferd[{extra}]'" in said, said
    assert "Traceback" not in said, said
    assert time.monotonic() - started < 30  # ends at once: nothing is fetched, no server starts
    assert [path.name for path in tmp_path.iterdir()] in ([], ["project"])  # nothing written beside it


def test_the_library_hidden_is_what_fails() -> None:
    """The same command with nothing hidden gets past the check (the hiding is what the tests see)."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, "not_a_module_anyone_has", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=with_this_tree(dict(os.environ)),
    )
    assert done.returncode == 0, done.stderr
