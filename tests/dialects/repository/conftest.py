"""Model repositories written as data for the tests: model folders of several dialects, built here
(the ONNX model too), and the S3 server of the storage tests."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.dialects.cortex import projects
from tests.storage.conftest import bucket, s3_endpoint  # noqa: F401  (the S3 fixtures, shared)


def native(factor: float, cls: str = "Scaler") -> str:
    """A native model answering ``y = x * factor``."""
    return textwrap.dedent(f"""
        import inferd

        class {cls}(inferd.Model):
            def predict(self, inputs):
                return {{"y": inputs["x"] * {factor}}}
    """)


SELDON_ECHO = """
class Tripler:
    def predict(self, X, names):
        return X * 3
"""
CORTEX_ADDER = """
- kind: api
  name: adder
  onnx:
    model: adder.onnx
"""


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip())
    return folder


@pytest.fixture(scope="session")
def adder_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("onnx") / "adder.onnx"
    projects.adder_onnx(path)
    return path


def cortex_folder(folder: Path, adder_onnx: Path) -> Path:
    write(folder, {"cortex.yaml": CORTEX_ADDER})
    shutil.copy(adder_onnx, folder / "adder.onnx")
    return folder


def mlserver_settings(**fields: Any) -> str:
    return json.dumps(fields)


def x_request(*values: float) -> dict[str, Any]:
    return {"inputs": [{"name": "x", "shape": [len(values)], "datatype": "FP32", "data": list(values)}]}


def answer(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v2/models/{path}/infer", json=body, timeout=30)


def y_of(url: str, path: str, *values: float) -> list[float]:
    response = answer(url, path, x_request(*values))
    assert response.status_code == 200, response.text
    data: list[float] = response.json()["outputs"][0]["data"]
    return data
