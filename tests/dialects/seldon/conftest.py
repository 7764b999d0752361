"""Real Seldon servers over the components of ``components/``, shared by the module's tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import RunningServer, serve

COMPONENTS = Path(__file__).parent / "components"
PARAMETERS = json.dumps(
    [
        {"name": "factor", "value": "3", "type": "INT"},
        {"name": "label", "value": "hello", "type": "STRING"},
        {"name": "enabled", "value": "true", "type": "BOOL"},
        {"name": "ratio", "value": "0.5", "type": "FLOAT"},
    ]
)
DEPLOYMENT_ENV = {
    "PREDICTIVE_UNIT_ID": "classifier",
    "PREDICTIVE_UNIT_IMAGE": "seldonio/everything:0.3",
    "SELDON_DEPLOYMENT_ID": "mydep",
    "PREDICTOR_ID": "main",
    "PREDICTOR_LABELS": '{"version": "v7"}',
    "PREDICTIVE_UNIT_METRICS_ENDPOINT": "/prometheus",
}


@pytest.fixture(scope="session")
def identity_server() -> Iterator[RunningServer]:
    with serve("Identity", "--dialect", "seldon", cwd=COMPONENTS) as server:
        yield server


@pytest.fixture(scope="session")
def everything_server() -> Iterator[RunningServer]:
    with serve(
        "Everything", "--dialect", "seldon", "--parameters", PARAMETERS, env=DEPLOYMENT_ENV, cwd=COMPONENTS
    ) as server:
        yield server


@pytest.fixture(scope="session")
def raw_server() -> Iterator[RunningServer]:
    with serve("Raw", "--dialect", "seldon", cwd=COMPONENTS) as server:
        yield server


@pytest.fixture(scope="session")
def legacy_server() -> Iterator[RunningServer]:
    with serve("Legacy", "--dialect", "seldon", cwd=COMPONENTS) as server:
        yield server


def client(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.http_url, timeout=30) as http:
        yield http


@pytest.fixture
def identity(identity_server: RunningServer) -> Iterator[httpx.Client]:
    yield from client(identity_server)


@pytest.fixture
def everything(everything_server: RunningServer) -> Iterator[httpx.Client]:
    yield from client(everything_server)


@pytest.fixture
def raw(raw_server: RunningServer) -> Iterator[httpx.Client]:
    yield from client(raw_server)
