"""Handler files load by path under Cortex's module name, so a file named like a library shadows nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.dialects.cortex.projects import SETOSA
from tests.servers import RunningServer


@pytest.mark.parametrize(("api", "module"), [("in-folder", "onnx"), ("at-root", "sklearn")])
def test_handler_named_like_a_library_imports_the_library(
    library_names_server: RunningServer, api: str, module: str
) -> None:
    """``handlers/onnx.py`` and a project-root ``sklearn.py`` (the root is on sys.path) both import the
    real onnx and sklearn, and onnxruntime still runs the model."""
    response = httpx.post(f"{library_names_server.http_url}/{api}", json=SETOSA, timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["label"] == 0
    assert body["name"] == f"request_handler_{api}"
    for name, file in body["files"].items():
        assert Path(file).parts[-2:] == (name, "__init__.py"), file
        assert "library-names" not in file, f"{name} came from the project: {file}"
