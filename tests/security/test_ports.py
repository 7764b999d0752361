"""Only the workers of one server share its ports: a second server asked for a port the first one
serves (gRPC, which workers join with SO_REUSEPORT, or HTTP) fails to start with exit code 1 and a
message naming the port, and the first server keeps answering on both."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.security.conftest import APPS
from tests.servers import RunningServer, free_port, inferd_command, serve, with_this_tree

TARGET = (str(APPS / "native_models.py"), "--dialect", "native")


@pytest.fixture(scope="module", params=["1", "2"], ids=["one-process", "two-workers"])
def first(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    with serve(*TARGET, "--workers", request.param) as running:
        yield running


def _second(temp: Path, http_port: str, grpc_port: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Another server on these ports; it must stop, leaving nothing in its temp dir (``temp``)."""
    command = inferd_command("serve", *TARGET, "--port", http_port, "--grpc-port", grpc_port, *options)
    env = with_this_tree({**os.environ, "TMPDIR": str(temp)})
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=APPS, env=env)
    assert not list(temp.iterdir())  # a supervisor's metrics dir is made once its ports are bound
    return done


def _still_answers(server: RunningServer) -> None:
    assert httpx.get(f"{server.http_url}/v2/health/ready", timeout=10).status_code == 200
    assert server.grpc_address is not None
    for _ in range(8):  # fresh connections, which any of the first server's workers may take
        with grpc.insecure_channel(server.grpc_address) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ModelReady(pb.ModelReadyRequest(name="sleepy"), timeout=10).ready


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_second_server_cannot_join_the_grpc_port(
    first: RunningServer, workers: str, tmp_path: Path
) -> None:
    assert first.grpc_address is not None
    grpc_port = first.grpc_address.rpartition(":")[2]
    second = _second(tmp_path, str(free_port()), grpc_port, "--workers", workers)
    assert second.returncode == 1, second.stderr
    assert f"127.0.0.1:{grpc_port}" in second.stderr
    assert "inferd ready" not in second.stdout
    _still_answers(first)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_second_server_cannot_take_the_http_port(
    first: RunningServer, workers: str, tmp_path: Path
) -> None:
    http_port = first.http_url.rpartition(":")[2]
    second = _second(tmp_path, http_port, str(free_port()), "--workers", workers)
    assert second.returncode == 1, second.stderr
    assert f"127.0.0.1:{http_port}" in second.stderr
    _still_answers(first)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_both_ports_taken_are_named_before_any_model_loads(
    first: RunningServer, workers: str, tmp_path: Path
) -> None:
    """A second server on both of the first one's ports names both, and the options choosing others,
    before it loads anything (it named only the gRPC port, after loading the model)."""
    assert first.grpc_address is not None
    http_port, grpc_port = first.http_url.rpartition(":")[2], first.grpc_address.rpartition(":")[2]
    second = _second(tmp_path, http_port, grpc_port, "--workers", workers)
    assert second.returncode == 1, second.stderr
    message = " ".join(second.stderr.split())
    assert f"cannot listen on 127.0.0.1:{http_port}" in message and "--port chooses another" in message
    assert f"cannot listen on 127.0.0.1:{grpc_port}" in message and "--grpc-port chooses another" in message
    assert "loaded" not in message  # no model was loaded first
    _still_answers(first)
