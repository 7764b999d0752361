"""Slow request bodies against a real control process (``inferd platform serve``) with tokens, ten
connections a port and a short body timeout: on its control API and on its gateway (an endpoint of a
running service behind it), ten clients that declare a body and send it a byte at a time, with or
without a token, cannot lock an authorized client out; a request answered before its body (401) has
its connection closed at once; a body that trickles too slowly gets 408 and its connection closed."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.platform.control import Control, control, native_project

TOKEN = "platform-slow-token"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}
MAX_CONNECTIONS = 10
BODY_TIMEOUT = 2.0
#: Within the control API's body limit (1 MiB) and the gateway's (64 MiB): the server waits for it.
DECLARED = 100_000


@dataclass(frozen=True)
class Target:
    """A port of the control process: where it listens, a route that reads a body, an authorized GET."""

    address: tuple[str, int]
    body_path: str
    get_url: str


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    """The control process with a service of a native model running behind the endpoint ``main``."""
    root = tmp_path_factory.mktemp("slow-bodies")
    env = {
        "INFERD_AUTH_TOKENS": TOKEN,
        "INFERD_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "INFERD_BODY_TIMEOUT": str(BODY_TIMEOUT),
    }
    with control(root / "data", env=env) as running:
        deploy(running, root)
        yield running


def call(running: Control, method: str, path: str, **kwargs: object) -> httpx.Response:
    return running.call(method, path, headers=AUTHORIZED, **kwargs)  # type: ignore[arg-type]


def deploy(running: Control, root: Path) -> None:
    folder = native_project(
        root / "project",
        "echo",
        """
            import inferd

            class Echo(inferd.Model):
                def predict(self, inputs):
                    return {"y": inputs["x"]}
        """,
    )
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=path.name)
    assert call(running, "POST", "/deployments", json={"name": "slow"}).status_code == 201
    pushed = call(
        running,
        "POST",
        "/deployments/slow/versions",
        data={"label": "1"},
        files={"archive": ("echo.tar.gz", packed.getvalue(), "application/gzip")},
    )
    assert pushed.status_code == 201, pushed.text
    created = call(running, "POST", "/deployments/slow/services", json={"version": pushed.json()["id"]})
    assert created.status_code == 201, created.text
    service = created.json()["id"]
    deadline = time.monotonic() + 60
    while (state := call(running, "GET", f"/services/{service}").json()["state"]) != "running":
        assert time.monotonic() < deadline and state in ("starting", "pending"), state
        time.sleep(0.2)
    routes = {"routes": [{"service": service, "weight": 100}]}
    assert call(running, "PUT", "/deployments/slow/endpoints/main", json=routes).status_code in (200, 201)


def target(running: Control, name: str) -> Target:
    if name == "api":
        url = httpx.URL(running.api)
        return Target((url.host, url.port or 80), "/platform/v1/deployments", running.api + "/deployments")
    url = httpx.URL(running.gateway)
    get_url = f"{running.gateway}/e/main/v2/health/ready"
    return Target((url.host, url.port or 80), "/e/main/v2/models/echo/infer", get_url)


def slow_request(where: Target, token: str | None) -> bytes:
    authorization = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST {where.body_path} HTTP/1.1\r\nHost: localhost\r\n{authorization}"
        f"Content-Type: application/json\r\nContent-Length: {DECLARED}\r\n\r\n{{"
    ).encode()


def trickle(socks: list[socket.socket]) -> None:
    for sock in socks:
        try:
            sock.send(b" ")
        except OSError:
            pass  # the server closed it


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    started, received = time.monotonic(), b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received, time.monotonic() - started


@pytest.mark.parametrize("name", ["api", "gateway"])
@pytest.mark.parametrize("token", [None, TOKEN], ids=["without-token", "with-token"])
def test_slow_bodies_cannot_lock_an_authorized_client_out(
    platform: Control, name: str, token: str | None
) -> None:
    """The issue's attack: as many slow bodies as the port keeps connections. An authorized GET is
    answered 200 while they trickle; a body without a token is answered 401 and its connection ends
    at once, and an authorized one that trickles gets 408 once its rate is too low."""
    where = target(platform, name)
    time.sleep(0.3)  # the earlier tests' connections are gone
    with ExitStack() as held:
        slow = [
            held.enter_context(socket.create_connection(where.address, timeout=10))
            for _ in range(MAX_CONNECTIONS)
        ]
        started = time.monotonic()
        for sock in slow:
            sock.sendall(slow_request(where, token))
        time.sleep(0.3)
        trickle(slow)
        answer = httpx.get(where.get_url, headers=AUTHORIZED, timeout=5)
        assert answer.status_code == 200, answer.text
        assert time.monotonic() - started < BODY_TIMEOUT  # while the slow bodies still held on
        trickle(slow)
        ended = [read_until_closed(sock) for sock in slow]
    if token is None:  # refused before the body: the connection ends with the answer
        for received, took in ended:
            assert received.startswith(b"HTTP/1.1 401 "), received
            assert took < BODY_TIMEOUT
    else:  # one made room for the GET; the others end 408
        timed_out = [received for received, _ in ended if received.startswith(b"HTTP/1.1 408 ")]
        assert len(timed_out) >= MAX_CONNECTIONS - 1, ended
        body = json.loads(timed_out[0].partition(b"\r\n\r\n")[2])
        assert "request body" in body["error"]
    assert httpx.get(where.get_url, headers=AUTHORIZED, timeout=5).status_code == 200
