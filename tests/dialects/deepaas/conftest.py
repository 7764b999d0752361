"""Real DEEPaaS servers: the demo models of ``site/`` found through their entry points, and the
built-in ``deepaas-test`` model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.servers import RunningServer, client_of, serve, served

SITE = Path(__file__).parent / "site"


def site_env(**more: str) -> dict[str, str]:
    """The demo models' folder on the path, so importlib.metadata finds their entry points."""
    return {"PYTHONPATH": str(SITE), **more}


@contextmanager
def serve_demo(
    tmp_path_factory: pytest.TempPathFactory, target: str, *args: str, temp: Path | None = None
) -> Iterator[RunningServer]:
    """``target`` (empty: the entry points) served by the DEEPaaS dialect with a data folder of its own,
    and ``temp`` as its temporary folder (``TMPDIR``) when given."""
    data_dir = tmp_path_factory.mktemp("deepaas-data")
    env = site_env(**({"TMPDIR": str(temp)} if temp else {}))
    with serve(target, "--dialect", "deepaas", "--data-dir", str(data_dir), *args, env=env) as server:
        yield server


@pytest.fixture(scope="session")
def demo_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo server's temporary folder, where its uploads go: its own, so that a test counting the
    files left there sees no other process's (tests running beside it in another worker)."""
    return tmp_path_factory.mktemp("deepaas-temp")


demo_server = served(lambda tmp_path_factory, demo_temp: serve_demo(tmp_path_factory, "", temp=demo_temp))
test_model_server = served(
    lambda tmp_path_factory: serve_demo(tmp_path_factory, "", "--model-name", "deepaas-test")
)
demo = client_of("demo_server")
builtin = client_of("test_model_server")
