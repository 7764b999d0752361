"""Servers for Triton's extensions: the bundled iris example behind a bearer token, on inferd's own
gRPC server and on grpcio's (``--grpc-server grpcio``); and ``inferd serve --repository`` with
adaptive batching on, holding ``scores`` (its input as its scores, with a ``labels.txt``),
``plain`` (the same code, no labels) and ``named`` (its labels its own attribute). Each started
once per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from tests.conftest import IRIS
from tests.dialects.repository.conftest import write
from tests.servers import RunningServer, serve

TOKEN = "triton-extensions-token"
#: Copy it for each call: tritonclient.http adds its own headers to the dict it is given.
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module", params=["inferd", "grpcio"])
def secured_iris(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    env = {"INFERD_AUTH_TOKENS": TOKEN}
    with serve(IRIS, "--grpc-server", request.param, env=env) as server:
        yield server


def http_client(server: RunningServer) -> Any:
    return httpclient.InferenceServerClient(server.http_address)


def grpc_client(server: RunningServer) -> Any:
    assert server.grpc_address is not None
    return grpcclient.InferenceServerClient(server.grpc_address)


#: Answers its input ``x`` (FP32, [-1, 4]) as its output ``scores``.
SCORES_MODEL = """
import inferd
from inferd import TensorSpec


class Scores(inferd.Model):
    inputs = (TensorSpec("x", "FP32", (-1, 4)),)
    outputs = (TensorSpec("scores", "FP32", (-1, 4)),)

    def predict(self, inputs):
        return {"scores": inputs["x"]}
"""
LABELS = ["cat", "dog", "bird", "fish"]
#: The same model naming its classes itself (a ``labels`` attribute).
NAMED_LABELS = ["nord", "est", "sud", "ouest"]
NAMED_MODEL = (
    SCORES_MODEL
    + f"""
    labels = {NAMED_LABELS!r}
"""
)


@pytest.fixture(scope="module")
def repository_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root: Path = tmp_path_factory.mktemp("triton-repository")
    write(root / "scores", {"model.py": SCORES_MODEL, "labels.txt": "\n".join(LABELS) + "\n"})
    write(root / "plain", {"model.py": SCORES_MODEL})
    write(root / "named", {"model.py": NAMED_MODEL})
    env = {"INFERD_AUTH_TOKENS": TOKEN, "INFERD_MAX_BATCH_SIZE": "8", "INFERD_MAX_BATCH_TIME_MS": "2"}
    with serve(f"--repository={root}", env=env) as server:
        yield server
