from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.servers import ROOT, RunningServer, serve

IRIS = str(ROOT / "examples" / "iris")
TEST_MODELS = ROOT / "tests" / "models"


@pytest.fixture(scope="session")
def iris_server() -> Iterator[RunningServer]:
    """The bundled iris example served once for the whole session (HTTP + gRPC)."""
    with serve(IRIS) as server:
        yield server


@pytest.fixture(scope="session")
def models_server() -> Iterator[RunningServer]:
    """The toy models of tests/models/native.py, all served by one process."""
    with serve(str(TEST_MODELS / "native.py"), "--dialect", "native") as server:
        yield server


@pytest.fixture
def client(iris_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=iris_server.http_url, timeout=30) as http:
        yield http
