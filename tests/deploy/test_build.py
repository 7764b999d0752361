"""inferd build: a Dockerfile and a .dockerignore written into the project folder."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from inferd import __version__
from tests.conftest import IRIS
from tests.servers import ROOT, inferd_command


def build(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        inferd_command("build", *args), capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each line that is not a comment."""
    lines = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    return [(line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in lines]


def test_the_iris_project_gets_a_dockerfile_serving_it(tmp_path: Path) -> None:
    project = tmp_path / "iris"
    shutil.copytree(IRIS, project, ignore=shutil.ignore_patterns("__pycache__", "*.joblib"))
    (project / "requirements.txt").write_text("scikit-learn\njoblib\n")
    done = build(str(project / "model.py:Iris"))
    assert done.returncode == 0, done.stderr
    dockerfile = (project / "Dockerfile").read_text()
    steps = instructions(dockerfile)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert steps[0] == ("FROM", f"python:{python}-slim")
    assert ("RUN", f"pip install inferd=={__version__}") in steps
    assert ("WORKDIR", "/app") in steps
    # the requirements install before the project is copied, so code changes keep that layer
    names = [f"{kind} {rest}" for kind, rest in steps]
    assert names.index("RUN pip install -r requirements.txt") < names.index("COPY . .")
    assert ("USER", "10001") in steps
    server_env = dict(re.findall(r"(\w+)=(\S+)", [rest for kind, rest in steps if kind == "ENV"][-1]))
    assert server_env == {"INFERD_HOST": "0.0.0.0", "INFERD_PORT": "8080", "INFERD_GRPC_PORT": "8081"}
    health = json.loads(dict(steps)["HEALTHCHECK"].split("CMD ", 1)[1])
    assert health[:2] == ["python", "-c"] and "/v2/health/ready" in health[2]
    assert json.loads(steps[-1][1]) == ["inferd", "serve", "/app/model.py:Iris"]
    ignored = (project / ".dockerignore").read_text().splitlines()
    assert {".git", ".venv", "__pycache__", ".inferd"} <= set(ignored)
    assert str(project) in done.stderr


def test_extras_follow_the_project_and_an_existing_dockerfile_is_kept(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not really")
    (tmp_path / "cortex.yaml").write_text("- name: iris\n")
    done = build(str(tmp_path / "cortex.yaml"), "--engine", "ray", "--extra", "video")
    assert done.returncode == 0, done.stderr
    assert f"RUN pip install 'inferd[onnx,ray,video]=={__version__}'" in (tmp_path / "Dockerfile").read_text()
    again = build(str(tmp_path / "cortex.yaml"), "--inferd-spec", "inferd @ file:///wheels/inferd.whl")
    assert again.returncode == 2 and "--force" in again.stderr
    forced = build(str(tmp_path), "--inferd-spec", "/wheels/inferd-1-py3-none-any.whl", "--force")
    assert forced.returncode == 0, forced.stderr
    dockerfile = (tmp_path / "Dockerfile").read_text()
    assert "RUN pip install /wheels/inferd-1-py3-none-any.whl\n" in dockerfile
    assert dockerfile.rstrip().endswith('CMD ["inferd", "serve", "/app"]')
