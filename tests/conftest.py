"""The servers many test folders share: the bundled iris example and the toy models of tests/models."""

from __future__ import annotations

import pytest

from tests.servers import ROOT, client_of, serve, served

IRIS = str(ROOT / "examples" / "iris")
TEST_MODELS = ROOT / "tests" / "models"

#: The bundled iris example served once for the whole session (HTTP + gRPC).
iris_server = served(lambda: serve(IRIS))
#: The toy models of tests/models/native.py, all served by one process.
models_server = served(lambda: serve(str(TEST_MODELS / "native.py"), "--dialect", "native"))
client = client_of("iris_server")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test file is one unit of work for pytest-xdist (``--dist loadgroup`` in pyproject.toml), as
    ``--dist loadfile`` would make it, so a module's servers start once, in one worker; a test marked
    ``xdist_group(NAME)`` keeps that group instead and shares a worker with the other tests of NAME (the
    files starting a local Ray: two Rays at once would starve each other on two cores). Runs before
    xdist reads the marks."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
