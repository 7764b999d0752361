"""Cortex projects built once per session in a temp dir, and real servers over them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dialects.cortex import projects
from tests.servers import ROOT, client_of, serve, served

IN_THREAD = {"INFERD_PREDICT_IN_THREAD": "true"}


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
def library_names_project(projects_root: Path, models_dir: Path) -> Path:
    models = {"iris.onnx": models_dir / "iris.onnx"}
    return make_project(projects_root, "library-names", projects.LIBRARY_NAMES, models)


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


tf_server = served(lambda tf_project: serve(str(tf_project)))
v08_server = served(lambda v08_project: serve(str(v08_project / "cortex.yaml")))
#: Served by directory, proving the requirements.txt is left alone without --install-requirements.
v10_server = served(lambda v10_project: serve(str(v10_project)))
#: Handlers run in a thread here, one call at a time.
misc_server = served(
    lambda misc_project: serve(
        str(misc_project / "cortex.yaml"), "--dialect", "cortex", "--install-requirements", env=IN_THREAD
    )
)
library_names_server = served(lambda library_names_project: serve(str(library_names_project), "--no-grpc"))
tf = client_of("tf_server")
v08 = client_of("v08_server")
v10 = client_of("v10_server")
misc = client_of("misc_server")
