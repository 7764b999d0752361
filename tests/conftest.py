"""The servers many test folders share: the bundled iris example and the toy models of tests/models."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

from tests.servers import ROOT, client_of, serve, served

IRIS = str(ROOT / "examples" / "iris")
TEST_MODELS = ROOT / "tests" / "models"

#: The bundled iris example served once for the whole session (HTTP + gRPC).
iris_server = served(lambda: serve(IRIS))
#: The toy models of tests/models/native.py, all served by one process.
models_server = served(lambda: serve(str(TEST_MODELS / "native.py"), "--dialect", "native"))
client = client_of("iris_server")


#: Test files that share one pytest-xdist worker, by group: each starts a local Ray, and two Rays at
#: once would starve each other (and the other worker) on two cores.
SHARED_WORKER = {
    "tests/engines/test_ray.py": "local-ray",
    "tests/engines/test_ray_graph.py": "local-ray",
    "tests/engines/test_ray_start.py": "local-ray",
    "tests/platform/test_ray_service.py": "local-ray",
}


class FileScheduling(LoadFileScheduling):
    """``--dist loadfile`` (pyproject's addopts): each test file is one unit of work, so its module's
    servers start once, in one worker; the files of a SHARED_WORKER group are one unit together.
    (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but pytest-xdist 3.8 marks
    the test ids in a way pytest 9.2 no longer reads, so the marks group nothing.)"""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return SHARED_WORKER.get(path, path)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    """FileScheduling for ``--dist loadfile``; any other ``--dist`` is pytest-xdist's own."""
    return FileScheduling(config, log) if config.getvalue("dist") == "loadfile" else None
