"""Traffic splitting: shares by weight, switching under load without a failed request, draining."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import httpx
from starlette.types import Message

from inferd.platform.gateway import EndpointTable, Gateway
from tests.platform.gateway.conftest import RunningGateway, Upstream

REQUESTS = 10_000


async def call(app: Gateway, path: bytes) -> tuple[int, bytes]:
    """One GET through the gateway app in this process: its status and body."""
    sent: list[Message] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path.decode(),
        "raw_path": path,
        "query_string": b"",
        "headers": [(b"host", b"gateway")],
        "client": ("127.0.0.1", 5000),
    }
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


async def test_weights_90_10_over_10000_requests(
    table: EndpointTable, alpha: Upstream, beta: Upstream
) -> None:
    table.set("canary", [(alpha.address, 90), (beta.address, 10)])
    app = Gateway(table)
    answers: Counter[bytes] = Counter()
    limit = asyncio.Semaphore(32)

    async def one() -> None:
        async with limit:
            status, body = await call(app, b"/e/canary/")
            assert status == 200
            answers[body] += 1

    await asyncio.gather(*(one() for _ in range(REQUESTS)))
    app.close()
    assert sum(answers.values()) == REQUESTS
    assert abs(answers[b"alpha"] / REQUESTS - 0.90) <= 0.01, answers
    assert abs(answers[b"beta"] / REQUESTS - 0.10) <= 0.01, answers
    assert len(alpha.hits) + len(beta.hits) == REQUESTS
    assert table.inflight(alpha.address) == table.inflight(beta.address) == 0


def test_switch_under_load_fails_nothing(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream, beta: Upstream
) -> None:
    table.set("bluegreen", [(alpha.address, 100), (beta.address, 0)])
    results: list[tuple[float, int, str]] = []
    stop = threading.Event()

    def load() -> None:
        with gateway.http() as http:
            while not stop.is_set():
                started = time.monotonic()
                answer = http.post("/e/bluegreen/echo", content=b"payload")
                ok = answer.status_code == 200 and answer.content == b"payload"
                results.append((started, answer.status_code if ok else -1, answer.headers["x-upstream"]))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    table.set("bluegreen", [(alpha.address, 0), (beta.address, 100)])
    switched = time.monotonic()
    time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join(10)
    assert len(results) > 100
    assert {status for _, status, _ in results} == {200}
    after = {upstream for started, _, upstream in results if started > switched}
    before = {upstream for started, _, upstream in results if started < switched - 0.1}
    assert after == {"beta"} and before == {"alpha"}
    assert gateway.call(table.drained(alpha.address, 5))


def test_drained_waits_for_a_slow_request(
    table: EndpointTable, gateway: RunningGateway, alpha: Upstream, beta: Upstream
) -> None:
    table.set("ep", [(alpha.address, 100), (beta.address, 0)])
    slow: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: slow.append(httpx.get(f"{gateway.url}/e/ep/sleep/1", timeout=30))
    )
    started = time.monotonic()
    thread.start()
    while table.inflight(alpha.address) == 0:
        assert time.monotonic() - started < 5
        time.sleep(0.01)
    table.set("ep", [(alpha.address, 0), (beta.address, 100)])
    assert httpx.get(f"{gateway.url}/e/ep/").text == "beta"  # new requests go to the new upstream
    assert not gateway.call(table.drained(alpha.address, 0.1))
    assert table.inflight(alpha.address) == 1
    assert gateway.call(table.drained(alpha.address, 10))
    waited = time.monotonic() - started
    thread.join(10)
    assert slow[0].status_code == 200 and slow[0].text == "alpha"
    assert 0.9 < waited < 5
    assert table.inflight(alpha.address) == 0
