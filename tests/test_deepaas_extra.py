"""DEEPaaS's libraries (marshmallow, webargs, apispec, swagger-ui-bundle) are behind ``inferd[deepaas]``
(issue 43 item 10), no longer installed by everyone: serving a DEEPaaS model without them ends
``inferd serve`` with exit 2 and the install line, as every missing extra; every other target, and
every module of inferd outside the DEEPaaS dialect, works without them.

The libraries are installed here; each command runs in a Python where they cannot be imported
(``sys.modules[name] = None``, as `tests.test_cli_missing_extras` does)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import tomllib

from inferd.dialects.deepaas.extra import LIBRARIES
from inferd.scaffold import create
from tests.conftest import IRIS
from tests.servers import ROOT, with_this_tree
from tests.test_cli_missing_extras import WITHOUT, serve_without

HIDDEN = ",".join(LIBRARIES)
INSTALL = "pip install 'inferd[deepaas]'"


def test_a_deepaas_scaffold_without_the_extra_exits_2_naming_it(tmp_path: Path) -> None:
    """The scaffold's model imports webargs at its top: detection finds out and says what to install."""
    create(tmp_path / "my-deepaas", "deepaas")
    started = time.monotonic()
    done = serve_without(HIDDEN, "my-deepaas", tmp_path, "--grpc-port", "0")
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, said
    assert INSTALL in said and "webargs" in said, said
    assert "Traceback" not in said, said
    assert time.monotonic() - started < 30
    assert [path.name for path in tmp_path.iterdir()] == ["my-deepaas"]  # nothing written beside it


def test_init_of_a_deepaas_project_without_the_extra_says_to_install_it_first(tmp_path: Path) -> None:
    """`make demo`'s environment has no DEEPaaS libraries: the printed next step starts with the
    install line (`inferd serve my-deepaas` alone would end with exit 2)."""
    command = [sys.executable, "-c", WITHOUT, HIDDEN, "init", "my-deepaas", "--dialect", "deepaas"]
    env = with_this_tree({**os.environ, "COLUMNS": "200"})
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    said = " ".join(done.stderr.split())
    assert done.returncode == 0, said
    assert f"Next: {INSTALL}, then inferd serve my-deepaas, then inferd call my-deepaas" in said, said


def test_the_builtin_deepaas_model_without_the_extra_exits_2_naming_it(tmp_path: Path) -> None:
    """--dialect deepaas, no model code of the user's: the dialect itself asks for its extra."""
    done = serve_without(
        HIDDEN, "", tmp_path, "--dialect", "deepaas", "--model-name", "deepaas-test", "--grpc-port", "0"
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, said
    assert INSTALL in said and "marshmallow" in said, said
    assert "Traceback" not in said, said


def test_other_targets_run_without_the_extra() -> None:
    """The native iris example is detected (every dialect is asked, DEEPaaS's too), loaded and answers
    without DEEPaaS's libraries."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, HIDDEN, "predict", str(IRIS), "--input", f"{IRIS}/request.json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=with_this_tree(dict(os.environ)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"outputs"' in done.stdout, done.stdout


def test_nothing_outside_the_deepaas_dialect_imports_its_libraries() -> None:
    """Every module of inferd but the DEEPaaS dialect's own imports with the libraries hidden (a module
    that needs another extra, onnxruntime say, may fail: only the DEEPaaS libraries count here)."""
    script = (
        "import importlib, pkgutil, sys\n"
        "names = sys.argv[1].split(',')\n"
        "for name in names: sys.modules[name] = None\n"
        "import inferd\n"
        "bad = []\n"
        "for module in pkgutil.walk_packages(inferd.__path__, 'inferd.'):\n"
        "    if module.name.endswith('__main__') or module.name.startswith('inferd.dialects.deepaas.'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(module.name)\n"
        "    except ImportError as exc:\n"
        "        if (exc.name or '').split('.')[0] in names: bad.append(f'{module.name}: {exc}')\n"
        "    except Exception:\n"
        "        pass\n"
        "import inferd.dialects.deepaas.loader, inferd.dialects.deepaas.discovery\n"
        "print('\\n'.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, HIDDEN],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=ROOT,
        env=with_this_tree(dict(os.environ)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", done.stdout


def test_the_base_install_leaves_them_out_and_the_extra_has_them() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for library in ("marshmallow", "webargs", "apispec", "swagger-ui-bundle"):
        assert library not in base
        assert any(library in wanted for wanted in project["optional-dependencies"]["deepaas"])
    assert "inferd[deepaas]" in project["optional-dependencies"]["dev"]
    assert not any("deepaas" in wanted for wanted in project["optional-dependencies"]["demo"])


def test_the_hiding_is_what_fails() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, "not_a_module_anyone_has", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=with_this_tree(dict(os.environ)),
    )
    assert done.returncode == 0, done.stderr


def test_a_deepaas_projects_image_installs_the_extra(tmp_path: Path) -> None:
    """``inferd build`` of a DEEPaaS scaffold installs inferd with its deepaas extra in the image."""
    from inferd.deploy.wheel import WHEEL_DIR
    from tests.deploy.test_build import WHEEL, build

    create(tmp_path / "my-deepaas", "deepaas")
    done = build(str(tmp_path / "my-deepaas"))
    assert done.returncode == 0, done.stderr
    dockerfile = (tmp_path / "my-deepaas" / "Dockerfile").read_text()
    assert f"RUN pip install './{WHEEL_DIR}/{WHEEL}[deepaas]'" in dockerfile
