"""The endpoint table: checked routes, picks by weight, in-flight counts and draining."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from inferd.platform.gateway import EndpointTable, Shadow, Target

A, B, C = "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"


@pytest.mark.parametrize(
    ("routes", "shadow", "message"),
    [
        ([("localhost", 100)], None, "host:port"),
        ([(A, -1)], None, ">= 0"),
        ([(A, 1.5)], None, ">= 0"),
        ([(A, 50), (A, 50)], None, "twice"),
        ([(A, 100)], (B, 120), "0..100"),
        ([(A, 100)], ("nowhere", 10), "host:port"),
    ],
)
def test_bad_routes_are_refused_and_the_old_ones_kept(
    routes: list[tuple[str, int]], shadow: tuple[str, float] | None, message: str
) -> None:
    table = EndpointTable()
    table.set("ep", [(C, 100)])
    with pytest.raises(ValueError, match=message):
        table.set("ep", routes, shadow)
    split = table.get("ep")
    assert split is not None and split.upstreams == (C,)


def test_picks_follow_the_weights() -> None:
    table = EndpointTable()
    table.set("ep", [Target(A, 90), Target(B, 10), Target(C, 0)])
    counts: Counter[str | None] = Counter()
    for _ in range(100_000):
        picked = table.begin("ep")
        assert picked is not None
        counts[picked[1]] += 1
        table.end(picked[1])  # type: ignore[arg-type]
    assert abs(counts[A] / 100_000 - 0.9) < 0.01
    assert counts[C] == 0
    assert table.inflight(A) == table.inflight(B) == 0


def test_a_services_share_goes_to_its_least_busy_replica() -> None:
    table = EndpointTable()
    D = "127.0.0.1:9004"
    table.set("ep", [Target((A, B, C), 90), Target(D, 10)])
    held = [table.begin("ep") for _ in range(3_000)]
    counts = Counter(picked[1] for picked in held if picked)
    assert abs(counts[D] / 3_000 - 0.1) < 0.03  # the weights between services stay as set
    assert max(counts[A], counts[B], counts[C]) - min(counts[A], counts[B], counts[C]) <= 1
    for _ in range(counts[A]):
        table.end(A)  # A is idle now: the next requests of the first route go there
    picks = [table.begin("ep", mirror=False) for _ in range(50)]
    chosen = [picked[1] for picked in picks if picked is not None]
    assert set(chosen) <= {A, D} and A in chosen
    assert table.inflight_all()[D] == counts[D] + chosen.count(D)
    with pytest.raises(ValueError, match="twice"):
        table.set("ep", [Target((A, B), 50), Target((B, C), 50)])


def test_shadow_share_and_in_flight_counts() -> None:
    table = EndpointTable()
    table.set("ep", [(A, 100)], Shadow(B, 25))
    picks = [table.begin("ep") for _ in range(10_000)]
    shadows = sum(1 for picked in picks if picked and picked[2] == B)
    assert 2_200 < shadows < 2_800
    assert table.inflight(A) == 10_000 and table.inflight(B) == shadows


def test_no_weight_no_endpoint() -> None:
    table = EndpointTable()
    table.set("ep", [(A, 0)])
    assert table.begin("ep") == (table.get("ep"), None, None)
    table.remove("ep")
    assert table.begin("ep") is None and table.names() == []
    table.remove("ep")  # unknown: ignored


async def test_drained_waits_for_the_last_request_or_the_timeout() -> None:
    table = EndpointTable()
    table.set("ep", [(A, 100)])
    table.begin("ep")
    assert not await table.drained(A, 0.05)
    asyncio.get_running_loop().call_later(0.1, table.end, A)
    assert await table.drained(A, 5)
    assert table.inflight(A) == 0
