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
def serve_demo(tmp_path_factory: pytest.TempPathFactory, target: str, *args: str) -> Iterator[RunningServer]:
    """``target`` (empty: the entry points) served by the DEEPaaS dialect with a data folder of its own."""
    data_dir = tmp_path_factory.mktemp("deepaas-data")
    with serve(target, "--dialect", "deepaas", "--data-dir", str(data_dir), *args, env=site_env()) as server:
        yield server


demo_server = served(lambda tmp_path_factory: serve_demo(tmp_path_factory, ""))
test_model_server = served(
    lambda tmp_path_factory: serve_demo(tmp_path_factory, "", "--model-name", "deepaas-test")
)
demo = client_of("demo_server")
builtin = client_of("test_model_server")
