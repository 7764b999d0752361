"""What the Ray engine ships to a cluster (``ray_address``): the runtime_env, checked by Ray's own
``RuntimeEnv``, and the target as the replicas see it, relative to their unpacked copy of the project.
The end-to-end run, a model imported from the copy Ray unpacked, is in
tests/platform/test_ray_service.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from inferd.engines.ray_ship import EXCLUDES, runtime_env, shipped_fields, shipping_error


def test_the_runtime_env_ships_the_folder_without_caches_and_ray_accepts_it(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    from ray.runtime_env import RuntimeEnv

    checked = RuntimeEnv(**runtime_env(str(tmp_path)))
    assert checked["working_dir"] == str(tmp_path)
    assert {".git", "__pycache__", ".venv"} <= set(checked["excludes"]) == set(EXCLUDES)


def test_a_target_in_the_shipped_folder_becomes_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    folder = str(tmp_path)
    assert shipped_fields({"target": folder, "replicas": 2}, folder) == {"target": ".", "replicas": 2}
    assert shipped_fields({"target": f"{tmp_path}/model.py:Scale"}, folder)["target"] == "model.py:Scale"
    assert shipped_fields({"target": f"{tmp_path}/pkg"}, folder)["target"] == "pkg"


def test_a_module_name_or_a_path_elsewhere_stays(tmp_path: Path) -> None:
    folder = str(tmp_path / "project")
    for target in ("MyModel", "package.module:handler", str(tmp_path / "other" / "model.py"), None):
        assert shipped_fields({"target": target}, folder) == {"target": target}


def test_only_a_package_over_rays_limit_is_called_too_large() -> None:
    ray_says = ValueError("Package size (600.00MiB) exceeds the maximum size of 512.00MiB. To exclude ...")
    error = shipping_error(ray_says, "/srv/project")
    assert error is not None and "/srv/project" in error.message and "512.00MiB" in error.message
    assert ".rayignore" in error.message
    assert shipping_error(ConnectionError("connection refused"), "/srv/project") is None
