"""Servers for Triton's extensions: the bundled iris example behind a bearer token, on inferd's own
gRPC server and on grpcio's (``--grpc-server grpcio``), each started once for the folder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from tests.conftest import IRIS
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
