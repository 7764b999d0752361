"""gRPC through HAProxy (HTTP/2 both ways) to real ``inferd serve`` processes: the endpoint named by the
``inferd-endpoint`` metadata, a 100/0 → 0/100 switch through the runtime API under a thread of calls
with no failed call (drained waiting for the gRPC calls too), and HAProxy's own answers as gRPC
statuses."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from inferd.platform.haproxy import HAProxyPath
from tests.platform.gateway.grpc_support import GrpcLoad, infer, refusal, scales  # noqa: F401
from tests.servers import RunningServer, free_port

pytestmark = pytest.mark.skipif(
    shutil.which("haproxy") is None,
    reason="HAProxy is not installed (Debian: apt install haproxy; make test does)",
)


def grpc_of(*servers: RunningServer) -> dict[str, str]:
    return {server.http_address: str(server.grpc_address) for server in servers}


@pytest.fixture
async def haproxy(tmp_path: Path) -> AsyncIterator[HAProxyPath]:
    path = HAProxyPath(
        tmp_path / "haproxy", "127.0.0.1", free_port(), tokens=["secret"], grpc_port=free_port()
    )
    await path.start()
    try:
        yield path
    finally:
        await path.close()


async def test_grpc_follows_the_weights_and_switches_without_failing(
    haproxy: HAProxyPath,
    scales: tuple[RunningServer, RunningServer],  # noqa: F811
) -> None:
    one, two = scales
    address = f"127.0.0.1:{haproxy.grpc_port}"
    token = {"authorization": "Bearer secret"}
    await haproxy.route("main", [(one.http_address, 100), (two.http_address, 0)], None, grpc_of(one, two))
    assert await asyncio.to_thread(infer, address, "main", 1.0, **token) == 1.0
    assert await asyncio.to_thread(infer, address, None, 1.0, **token) == 1.0  # the only endpoint
    with GrpcLoad(address, **token) as load:
        await asyncio.sleep(0.5)
        await haproxy.route("main", [(one.http_address, 0), (two.http_address, 100)], None, grpc_of(one, two))
        assert await haproxy.drained(one.http_address, 10)
        await asyncio.sleep(0.5)
    assert load.failures == [] and 1.0 in load.answers and load.answers[-1] == 2.0
    assert await asyncio.to_thread(infer, address, "main", 1.0, **token) == 2.0

    status, message = await asyncio.to_thread(refusal, address, "main")
    assert status == "StatusCode.UNAUTHENTICATED" and "token" in message
    status, message = await asyncio.to_thread(refusal, address, "nope", **token)
    assert status == "StatusCode.NOT_FOUND" and "inferd-endpoint" in message
    dead = f"127.0.0.1:{free_port()}"
    await haproxy.route("dead", [(dead, 100)], None, {dead: f"127.0.0.1:{free_port()}"})
    assert await asyncio.to_thread(refusal, address, "dead", **token) == (
        "StatusCode.UNAVAILABLE",
        "endpoint 'dead': its service is unavailable",
    )
    assert await asyncio.to_thread(infer, address, "main", 3.0, **token) == 6.0  # the reload kept it
    status, _ = await asyncio.to_thread(refusal, address, None, **token)  # two endpoints: which?
    assert status == "StatusCode.NOT_FOUND"
