"""One real server per dialect with every security setting on: two bearer tokens, one request at a
time per model with one waiting, a 2 s request timeout, two files of 1000 bytes per upload, and a
temp dir of its own (to see that uploads leave nothing behind)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.dialects.cortex import projects
from tests.servers import ROOT, RunningServer, serve

APPS = Path(__file__).parent / "apps"
#: The server runs in APPS (where Seldon and ABEJA look for user code) with this tree's inferd first.
PYTHONPATH = os.pathsep.join((str(ROOT), str(APPS)))
TOKENS = ("token-one", "token-two")
TIMEOUT = 2.0
MAX_UPLOAD_SIZE = 1000
CORTEX_YAML = """
- kind: api
  name: slow
  predictor:
    path: predictor.py
    model: adder.onnx
"""


def secured_env(temp: Path) -> dict[str, str]:
    return {
        "INFERD_AUTH_TOKENS": ",".join(TOKENS),
        "INFERD_MAX_CONCURRENCY": "1",
        "INFERD_MAX_QUEUE_SIZE": "1",
        "INFERD_REQUEST_TIMEOUT": str(TIMEOUT),
        "INFERD_MAX_UPLOAD_FILES": "2",
        "INFERD_MAX_UPLOAD_SIZE": str(MAX_UPLOAD_SIZE),
        "TMPDIR": str(temp),
    }


def bearer(token: str = TOKENS[0]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Secured:
    """A secured server of one dialect and how to call its model the dialect's way."""

    dialect: str
    server: RunningServer
    temp: Path
    health: str
    ask: Callable[..., httpx.Response]

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        return self.server.http(headers=headers)


def _v2(http: httpx.Client, seconds: float = 0.0, boom: bool = False, **more: Any) -> httpx.Response:
    tensor = {"name": "seconds", "shape": [1], "datatype": "FP32", "data": [seconds]}
    return http.post(f"/v2/models/{'boom' if boom else 'sleepy'}/infer", json={"inputs": [tensor]}, **more)


def _seldon(http: httpx.Client, seconds: float = 0.0, boom: bool = False, **more: Any) -> httpx.Response:
    message = {"data": {"ndarray": [[-1 if boom else seconds]]}}
    return http.post("/api/v1.0/predictions", json=message, **more)


def _deepaas(http: httpx.Client, seconds: float = 0.0, boom: bool = False, **more: Any) -> httpx.Response:
    return http.post("/v2/models/uploader/predict/", params={"seconds": seconds, "boom": boom}, **more)


def _abeja(http: httpx.Client, seconds: float = 0.0, boom: bool = False, **more: Any) -> httpx.Response:
    headers = {**more.pop("headers", {}), "x-sleep": str(seconds), **({"x-boom": "1"} if boom else {})}
    if "files" not in more:
        more["json"] = {}
    return http.post("/", headers=headers, **more)


def _cortex(http: httpx.Client, seconds: float = 0.0, boom: bool = False, **more: Any) -> httpx.Response:
    return http.post("/predict", json="boom" if boom else seconds, **more)


def _cortex_project(root: Path) -> Path:
    folder = projects.write(root / "cortex", {"cortex.yaml": CORTEX_YAML})
    shutil.copy(APPS / "cortex_predictor.py", folder / "predictor.py")
    projects.adder_onnx(folder / "adder.onnx")
    return folder


#: dialect → (serve arguments, health path, caller); a callable first argument builds the target.
DIALECTS: dict[str, tuple[tuple[Any, ...], str, Callable[..., httpx.Response]]] = {
    "native": ((str(APPS / "native_models.py"), "--dialect", "native"), "/v2/health/ready", _v2),
    "seldon": (("SeldonApp", "--dialect", "seldon"), "/health/ping", _seldon),
    "deepaas": (("deepaas_app:Uploader", "--dialect", "deepaas"), "/v2/health/live", _deepaas),
    "abeja": (("abeja_app:handler", "--dialect", "abeja"), "/health_check", _abeja),
    "cortex": ((_cortex_project,), "/healthz", _cortex),
}


@pytest.fixture(scope="session", params=list(DIALECTS))
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    dialect: str = request.param
    arguments, health, ask = DIALECTS[dialect]
    root = tmp_path_factory.mktemp(f"secured-{dialect}")
    temp = root / "tmp"
    temp.mkdir()
    target, *options = arguments
    if callable(target):
        target = str(target(root))
    options += ["--access-log", "--log-level", "debug", "--data-dir", str(root / "data")]
    env = {**secured_env(temp), "PYTHONPATH": PYTHONPATH}
    with serve(target, *options, env=env, cwd=APPS) as server:
        yield Secured(dialect, server, temp, health, ask)
