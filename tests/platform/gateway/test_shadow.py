"""Shadow copies: a share of requests copied, their answers dropped, the client's answer untouched
by a slow or dead shadow, and the copies bounded."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from inferd.platform.gateway import EndpointTable, Shadow
from tests.platform.gateway.conftest import RunningGateway, Upstream, run_gateway, serve_upstream


@pytest.fixture(scope="module")
def sleepy() -> Iterator[Upstream]:
    """A shadow that takes 2 seconds over every answer."""
    with serve_upstream("sleepy", delay=2.0) as upstream:
        yield upstream


def wait_idle(table: EndpointTable, upstream: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while table.inflight(upstream):
        assert time.monotonic() < deadline, "shadow copies still in flight"
        time.sleep(0.01)


def dropped(endpoint: str) -> float:
    return REGISTRY.get_sample_value("inferd_gateway_shadow_dropped_total", {"endpoint": endpoint}) or 0


def test_the_shadow_gets_its_share_and_the_same_request(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream, beta: Upstream
) -> None:
    table.set("ep", [(alpha.address, 100)], Shadow(beta.address, 30))
    with gateway.http() as http:
        for number in range(1000):
            answer = http.post(f"/e/ep/echo?n={number}", content=b"body %d" % number)
            assert answer.status_code == 200 and answer.headers["x-upstream"] == "alpha"
    wait_idle(table, beta.address)
    assert len(alpha.hits) == 1000
    assert 230 <= len(beta.hits) <= 370, len(beta.hits)
    assert set(beta.hits) == {"/echo"}
    assert set(beta.bodies) <= set(alpha.bodies)


def test_a_slow_shadow_delays_nothing_and_is_bounded(
    table: EndpointTable, alpha: Upstream, sleepy: Upstream
) -> None:
    table.set("ep", [(alpha.address, 100)], Shadow(sleepy.address, 100))
    before = dropped("ep")
    with run_gateway(table) as gateway, gateway.http() as http:
        gateway.server.gateway.max_shadow_inflight = 5
        for _ in range(20):
            started = time.monotonic()
            answer = http.post("/e/ep/echo", content=b"x")
            assert answer.status_code == 200 and time.monotonic() - started < 0.5
        assert table.inflight(sleepy.address) == 5  # the rest were dropped, not queued
        assert dropped("ep") == before + 15
        wait_idle(table, sleepy.address)
    assert len(sleepy.hits) == 5


def test_a_dead_shadow_fails_nothing(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream, down: str
) -> None:
    table.set("ep", [(alpha.address, 100)], Shadow(down, 100))
    with gateway.http() as http:
        for _ in range(50):
            answer = http.post("/e/ep/echo", content=b"x")
            assert answer.status_code == 200 and answer.content == b"x"
    wait_idle(table, down)
    errors = REGISTRY.get_sample_value(
        "inferd_gateway_shadow_requests_total", {"endpoint": "ep", "outcome": "error"}
    )
    assert errors is not None and errors >= 50


def test_chunked_requests_are_copied_whole(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream, beta: Upstream
) -> None:
    table.set("ep", [(alpha.address, 100)], Shadow(beta.address, 100))
    with gateway.http() as http:
        answer = http.post("/e/ep/echo", content=iter([b"a" * 70_000, b"b" * 70_000]))
        assert answer.status_code == 200
    wait_idle(table, beta.address)
    assert beta.bodies == [b"a" * 70_000 + b"b" * 70_000]
