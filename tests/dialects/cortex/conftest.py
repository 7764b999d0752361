"""Cortex projects built once per session in a temp dir, and real servers over them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dialects.cortex import projects
from tests.servers import ROOT, RunningServer, serve


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cortex-models")
    projects.iris_onnx(folder / "iris.onnx")
    projects.adder_onnx(folder / "adder.onnx")
    return folder


def make_project(root: Path, name: str, files: dict[str, str], models: dict[str, Path]) -> Path:
    """A project dir with ``files`` and copies of built models at the given relative paths."""
    folder = projects.write(root / name, files)
    for relative, source in models.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / relative)
    return folder


@pytest.fixture(scope="session")
def projects_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cortex-projects")


@pytest.fixture(scope="session")
def v08_project(projects_root: Path, models_dir: Path) -> Path:
    models = {"models/iris.onnx": models_dir / "iris.onnx", "models/adder.onnx": models_dir / "adder.onnx"}
    return make_project(projects_root, "v08", projects.V08, models)


@pytest.fixture(scope="session")
def v10_project(projects_root: Path, models_dir: Path) -> Path:
    return make_project(projects_root, "v10", projects.V10, {"models/iris.onnx": models_dir / "iris.onnx"})


@pytest.fixture(scope="session")
def misc_project(projects_root: Path, models_dir: Path) -> Path:
    folder = make_project(projects_root, "misc", projects.MISC, {"adder.onnx": models_dir / "adder.onnx"})
    projects.pickled_handlers(folder / "handler.pickle")
    return folder


@pytest.fixture(scope="session")
def tf_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SavedModels built in a subprocess, so this process never imports TensorFlow."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("the tensorflow extra is not installed: pip install -e '.[tensorflow]'")
    folder = tmp_path_factory.mktemp("cortex-tf-models")
    command = [sys.executable, "-m", "tests.dialects.cortex.tf_models", str(folder)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="session")
def tf_project(projects_root: Path, tf_models_dir: Path) -> Path:
    folder = projects.write(projects_root / "tf", projects.TF)
    shutil.copytree(tf_models_dir, folder / "models")
    return folder


@pytest.fixture(scope="session")
def tf_server(tf_project: Path) -> Iterator[RunningServer]:
    with serve(str(tf_project)) as server:
        yield server


@pytest.fixture
def tf(tf_server: RunningServer) -> Iterator[httpx.Client]:
    yield from _client(tf_server)


def _client(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.http_url, timeout=30) as http:
        yield http


@pytest.fixture(scope="session")
def v08_server(v08_project: Path) -> Iterator[RunningServer]:
    with serve(str(v08_project / "cortex.yaml")) as server:
        yield server


@pytest.fixture(scope="session")
def v10_server(v10_project: Path) -> Iterator[RunningServer]:
    """Served by directory, proving the requirements.txt is left alone without --install-requirements."""
    with serve(str(v10_project)) as server:
        yield server


@pytest.fixture(scope="session")
def misc_server(misc_project: Path) -> Iterator[RunningServer]:
    target = str(misc_project / "cortex.yaml")
    env = {"INFERD_PREDICT_IN_THREAD": "true"}  # handlers run in a thread here, one call at a time
    with serve(target, "--dialect", "cortex", "--install-requirements", env=env) as server:
        yield server


@pytest.fixture(scope="session")
def library_names_server(projects_root: Path, models_dir: Path) -> Iterator[RunningServer]:
    files, models = projects.LIBRARY_NAMES, {"iris.onnx": models_dir / "iris.onnx"}
    with serve(str(make_project(projects_root, "library-names", files, models)), "--no-grpc") as server:
        yield server


@pytest.fixture
def v08(v08_server: RunningServer) -> Iterator[httpx.Client]:
    yield from _client(v08_server)


@pytest.fixture
def v10(v10_server: RunningServer) -> Iterator[httpx.Client]:
    yield from _client(v10_server)


@pytest.fixture
def misc(misc_server: RunningServer) -> Iterator[httpx.Client]:
    yield from _client(misc_server)
