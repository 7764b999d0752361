"""Real DEEPaaS servers: the demo models of ``site/`` found through their entry points, and the
built-in ``deepaas-test`` model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.servers import RunningServer, serve

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


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_demo(tmp_path_factory, "") as server:
        yield server


@pytest.fixture(scope="session")
def test_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_demo(tmp_path_factory, "", "--model-name", "deepaas-test") as server:
        yield server


@pytest.fixture
def demo(demo_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_server.http_url, timeout=30) as http:
        yield http


@pytest.fixture
def builtin(test_model_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=test_model_server.http_url, timeout=30) as http:
        yield http
