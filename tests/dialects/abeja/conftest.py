"""Real servers over the two handler projects of ``projects/``, shared by the module's tests."""

from __future__ import annotations

from pathlib import Path

from tests.servers import client_of, serve, served

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


legacy_server = served(lambda: serve("main:handler", "--dialect", "abeja", "--name", "legacy", cwd=LEGACY))
runtime_server = served(
    lambda: serve("main:handler", "--dialect", "abeja", "--access-log", cwd=RUNTIME, env=PLATFORM_ENV)
)
legacy = client_of("legacy_server")
runtime = client_of("runtime_server")
