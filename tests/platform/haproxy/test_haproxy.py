"""HAProxy as the endpoints' data path, a real haproxy process in front of real upstreams: routing by
prefix, weights changed through the runtime API under load with no failed request, a service added to
and removed from an endpoint, endpoints added and removed by a seamless reload, bearer tokens, and
inferd's JSON errors."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from inferd.platform.haproxy import HAProxyPath
from tests.platform.gateway.conftest import Upstream
from tests.servers import free_port

pytestmark = pytest.mark.skipif(
    shutil.which("haproxy") is None,
    reason="HAProxy is not installed (Debian: apt install haproxy; make test does)",
)


@pytest.fixture
async def haproxy(short_path: Path) -> AsyncIterator[HAProxyPath]:
    path = HAProxyPath(short_path / "haproxy", "127.0.0.1", free_port())
    await path.start()
    try:
        yield path
    finally:
        await path.close()


def origins(url: str, count: int) -> Counter[str]:
    with httpx.Client(timeout=10) as http:
        return Counter(http.get(url).headers.get("x-upstream", "?") for _ in range(count))


async def test_requests_follow_the_weights_and_switch_without_failing(
    haproxy: HAProxyPath, alpha: Upstream, beta: Upstream
) -> None:
    url = f"http://127.0.0.1:{haproxy.port}/e/main/hello"
    await haproxy.route("main", [(alpha.address, 100), (beta.address, 0)], None)
    assert await asyncio.to_thread(origins, url, 20) == {"alpha": 20}
    assert alpha.hits[-1] == "/hello"  # the /e/main prefix is removed
    failures: list[str] = []
    seen: list[str] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=10) as http:
            while not stop.is_set():
                answer = http.get(url)
                (seen if answer.status_code == 200 else failures).append(
                    answer.headers.get("x-upstream", answer.text)
                )

    thread = threading.Thread(target=load)
    thread.start()
    await asyncio.sleep(0.3)
    await haproxy.route("main", [(alpha.address, 0), (beta.address, 100)], None)
    assert await haproxy.drained(alpha.address, 5)
    await asyncio.sleep(0.3)
    stop.set()
    thread.join(10)
    assert failures == [] and "alpha" in seen and seen[-1] == "beta"
    shares = await asyncio.to_thread(origins, url, 400)
    assert shares == {"beta": 400}
    await haproxy.route("main", [(alpha.address, 50), (beta.address, 50)], None)
    shares = await asyncio.to_thread(origins, url, 400)
    assert 140 < shares["alpha"] < 260 and shares["alpha"] + shares["beta"] == 400


async def test_services_and_endpoints_come_and_go(
    haproxy: HAProxyPath, alpha: Upstream, beta: Upstream
) -> None:
    base = f"http://127.0.0.1:{haproxy.port}"
    await haproxy.route("one", [(alpha.address, 100)], None)
    await haproxy.route("one", [(beta.address, 100)], None)  # a new server, added at run time
    assert await asyncio.to_thread(origins, f"{base}/e/one/", 10) == {"beta": 10}
    await haproxy.route("two", [(alpha.address, 100)], None)  # a new backend: a reload keeps "one"
    assert await asyncio.to_thread(origins, f"{base}/e/two/x", 5) == {"alpha": 5}
    assert await asyncio.to_thread(origins, f"{base}/e/one/x", 5) == {"beta": 5}
    await haproxy.unroute("two")
    missing = httpx.get(f"{base}/e/two/x")
    assert missing.status_code == 404 and missing.json() == {"error": "no such endpoint"}
    assert httpx.get(f"{base}/elsewhere").status_code == 404
    with pytest.raises(Exception, match="embedded gateway"):
        await haproxy.route("one", [(alpha.address, 100)], (beta.address, 10))


async def test_tokens_and_a_dead_service(short_path: Path, alpha: Upstream) -> None:
    path = HAProxyPath(short_path / "h", "127.0.0.1", free_port(), tokens=["secret"])
    await path.start()
    try:
        await path.route("main", [(alpha.address, 100)], None)
        url = f"http://127.0.0.1:{path.port}/e/main/"
        refused = httpx.get(url)
        assert refused.status_code == 401 and "token" in refused.json()["error"]
        assert httpx.get(url, headers={"authorization": "Bearer secret"}).status_code == 200
        dead = f"127.0.0.1:{free_port()}"
        await path.route("main", [(dead, 100)], None)
        answer = httpx.get(url, headers={"authorization": "Bearer secret"})
        assert answer.status_code == 503 and "unavailable" in answer.json()["error"]
    finally:
        await path.close()
