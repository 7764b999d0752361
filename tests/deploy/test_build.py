"""inferd build: a Dockerfile and a .dockerignore written into the project folder, with a wheel of the
running inferd when it is not installable by version (it never is from a source checkout)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import httpx
import pytest
import yaml

from inferd import __version__
from inferd.deploy.wheel import WHEEL_DIR, Origin, origin, origin_of
from tests.conftest import IRIS
from tests.servers import ROOT, inferd_command, serve

WHEEL = f"inferd-{__version__}-py3-none-any.whl"


def build(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        inferd_command("build", *args), capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def init(folder: Path, dialect: str) -> None:
    done = subprocess.run(
        inferd_command("init", str(folder), "--dialect", dialect), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


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
    # this inferd runs from a source checkout: a wheel of it goes into the context and is installed
    assert (project / WHEEL_DIR / WHEEL).is_file()
    assert [path.name for path in (project / WHEEL_DIR).iterdir()] == [WHEEL]
    assert ("WORKDIR", "/app") in steps
    # inferd, then the requirements install before the project is copied, so code changes keep them
    names = [f"{kind} {rest}" for kind, rest in steps]
    wheel = names.index(f"COPY {WHEEL_DIR}/ {WHEEL_DIR}/")
    assert names[wheel + 1] == f"RUN pip install ./{WHEEL_DIR}/{WHEEL}"
    assert wheel < names.index("RUN pip install -r requirements.txt") < names.index("COPY . .")
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
    expected = f"RUN pip install './{WHEEL_DIR}/{WHEEL}[onnx,ray,video]'"
    assert expected in (tmp_path / "Dockerfile").read_text()
    again = build(str(tmp_path / "cortex.yaml"), "--inferd-spec", "inferd @ file:///wheels/inferd.whl")
    assert again.returncode == 2 and "--force" in again.stderr
    forced = build(str(tmp_path), "--inferd-spec", "/wheels/inferd-1-py3-none-any.whl", "--force")
    assert forced.returncode == 0, forced.stderr
    dockerfile = (tmp_path / "Dockerfile").read_text()
    assert "RUN pip install /wheels/inferd-1-py3-none-any.whl\n" in dockerfile
    assert dockerfile.rstrip().endswith('CMD ["inferd", "serve", "/app"]')


def test_a_project_naming_object_storage_installs_its_backend(tmp_path: Path) -> None:
    """A Cortex project whose ONNX model is in S3 (and a graph node's code over HTTPS) builds an image
    that can fetch and run them: the s3, http and onnx extras, with no model file in the folder."""
    (tmp_path / "cortex.yaml").write_text("- kind: api\n  name: iris\n  model: s3://bucket/iris.onnx\n")
    (tmp_path / "graph.yml").write_text("graph: {name: a, type: MODEL, target: 'https://h/x.py:X'}\n")
    done = build(str(tmp_path / "cortex.yaml"))
    assert done.returncode == 0, done.stderr
    assert f"RUN pip install './{WHEEL_DIR}/{WHEEL}[http,onnx,s3]'" in (tmp_path / "Dockerfile").read_text()


def test_inferd_yaml_name_engine_and_dialect_are_the_image_s(tmp_path: Path) -> None:
    """``inferd init`` writes the dialect and the name into inferd.yaml; build reads them (and the
    engine) from there: the ABEJA project's image installs the video extra, the Ray one Ray's."""
    project = tmp_path / "shop"
    init(project, "abeja")
    settings = yaml.safe_load((project / "inferd.yaml").read_text())
    (project / "inferd.yaml").write_text(yaml.safe_dump({**settings, "name": "Reader", "engine": "ray"}))
    done = build(str(project))
    assert done.returncode == 0, done.stderr
    steps = instructions((project / "Dockerfile").read_text())
    assert ("RUN", f"pip install './{WHEEL_DIR}/{WHEEL}[ray,video]'") in steps
    # the image's server reads its own copy of inferd.yaml: its settings are not repeated as variables
    server_env = dict(re.findall(r"(\w+)=(\S+)", [rest for kind, rest in steps if kind == "ENV"][-1]))
    assert server_env == {"INFERD_HOST": "0.0.0.0", "INFERD_PORT": "8080", "INFERD_GRPC_PORT": "8081"}
    assert json.loads(steps[-1][1]) == ["inferd", "serve", "/app"]
    assert f"docker build -t reader {project}" in " ".join(done.stderr.split())


def test_where_the_running_inferd_comes_from_decides_what_the_image_installs(tmp_path: Path) -> None:
    """PEP 610's record, not an index, tells whether ``inferd==X`` installs this inferd."""
    assert origin() == Origin(source=ROOT)  # these tests run from a checkout
    assert origin_of(None) == Origin()  # from an index: installed by version
    wheel = tmp_path / WHEEL
    wheel.write_bytes(b"a wheel")
    assert origin_of({"url": wheel.as_uri(), "archive_info": {}}) == Origin(wheel=wheel)
    assert origin_of({"url": ROOT.as_uri(), "dir_info": {"editable": True}}) == Origin(source=ROOT)
    git = {"url": "https://example.org/inferd.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert origin_of(git) == Origin(url="git+https://example.org/inferd.git@abc123")
    gone = tmp_path / "gone"
    with pytest.raises(Exception, match="pass --inferd-spec"):
        origin_of({"url": gone.as_uri(), "dir_info": {}})


@pytest.mark.timeout(900)
def test_what_the_dockerfile_installs_serves_the_project_in_a_clean_environment(tmp_path: Path) -> None:
    """No container daemon here: the Dockerfile's ``pip install`` lines run in a new virtual
    environment (nothing of this one visible), in the project folder as in ``/app``, and the
    project is served from it. Slow: it installs inferd's dependencies."""
    project = tmp_path / "reader"
    init(project, "abeja")
    done = build(str(project))
    assert done.returncode == 0, done.stderr
    steps = instructions((project / "Dockerfile").read_text())
    installs = [
        shlex.split(rest)[2:] for kind, rest in steps if kind == "RUN" and rest.startswith("pip install ")
    ]
    assert installs[0] == [f"./{WHEEL_DIR}/{WHEEL}[video]"] and installs[1] == ["-r", "requirements.txt"]
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    for arguments in installs:
        pip = [str(python), "-m", "pip", "install", "--quiet", *arguments]
        installed = subprocess.run(pip, cwd=project, capture_output=True, text=True, timeout=800)
        assert installed.returncode == 0, installed.stderr
    where = subprocess.run(
        [str(python), "-c", "import av, PIL, inferd; print(inferd.__file__)"],
        cwd=project, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(environment))  # the wheel's inferd, not this tree
    with serve(str(project), "--no-grpc", cwd=project, python=python) as server:
        assert server.models == ["reader"]
        sample = json.loads((project / "sample.json").read_text())
        answer = httpx.post(server.http_url, json=sample, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"words": 3, "text": "hello from abeja"}
