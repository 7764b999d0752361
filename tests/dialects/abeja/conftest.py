"""Real servers over the two handler projects of ``projects/``, shared by the module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import RunningServer, serve

PROJECTS = Path(__file__).parent / "projects"
LEGACY = PROJECTS / "legacy"
RUNTIME = PROJECTS / "runtime"
PLATFORM_ENV = {
    "ABEJA_ORGANIZATION_ID": "1234567890123",
    "ABEJA_MODEL_ID": "1111111111111",
    "ABEJA_MODEL_VERSION": "201906\u2212model2",
    "ABEJA_DEPLOYMENT_ID": "2222222222222",
    "ABEJA_SERVICE_ID": "ser-3333333333333",
    "CONTEXT": '{"mode": "service"}',
}


@pytest.fixture(scope="session")
def legacy_server() -> Iterator[RunningServer]:
    with serve("main:handler", "--dialect", "abeja", "--name", "legacy", cwd=LEGACY) as server:
        yield server


@pytest.fixture(scope="session")
def runtime_server() -> Iterator[RunningServer]:
    with serve("main:handler", "--dialect", "abeja", "--access-log", cwd=RUNTIME, env=PLATFORM_ENV) as server:
        yield server


@pytest.fixture
def legacy(legacy_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=legacy_server.http_url, timeout=30) as client:
        yield client


@pytest.fixture
def runtime(runtime_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=runtime_server.http_url, timeout=30) as client:
        yield client
