"""Other web pages against a server on loopback: a cross-site POST cannot reach the control routes
(V2 repository load and unload), and a page on a rebound DNS name gets nothing at all."""

from __future__ import annotations

import httpx
import pytest

from tests.security.conftest import APPS, PYTHONPATH
from tests.servers import client_of, serve, served

UNLOAD = "/v2/repository/models/sleepy/unload"
LOAD = "/v2/repository/models/sleepy/load"
READY = "/v2/models/sleepy/ready"
INFER = {"inputs": [{"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0.0]}]}


ENV = {"PYTHONPATH": PYTHONPATH, "INFERD_ALLOWED_HOSTS": "exact.test,.inferd.test"}
OPTIONS = ("--dialect", "native", "--no-grpc", "--allowed-origin", "http://trusted.test:8000")

guarded_server = served(lambda: serve(str(APPS / "native_models.py"), *OPTIONS, env=ENV), scope="module")
http = client_of("guarded_server")


def unload_from(http: httpx.Client, origin: str) -> httpx.Response:
    """What a page's ``fetch(url, {method: "POST", body: "x"})`` sends: a simple request, no preflight."""
    return http.post(UNLOAD, content=b"x", headers={"Origin": origin, "Content-Type": "text/plain"})


@pytest.mark.parametrize(
    "origin", ["http://evil.test", "null", "http://trusted.test:8001", "https://127.0.0.1"]
)
def test_a_foreign_origin_cannot_unload_a_model(http: httpx.Client, origin: str) -> None:
    refused = unload_from(http, origin)
    assert refused.status_code == 403, refused.text
    assert "cross-origin request refused" in refused.json()["error"]
    assert repr(origin) in refused.json()["error"]
    assert http.get(READY).status_code == 200  # still served
    assert http.post(LOAD, headers={"Origin": origin}).status_code == 403


def test_no_origin_its_own_and_listed_ones_may(http: httpx.Client) -> None:
    own = str(http.base_url).rstrip("/")
    for headers in ({}, {"Origin": own}, {"Origin": "http://TRUSTED.test:8000"}):
        assert http.post(UNLOAD, headers=headers).status_code == 200, headers
        assert http.get(READY).status_code == 400
        assert http.post(LOAD, headers=headers).status_code == 200, headers
        assert http.get(READY).status_code == 200


def test_inference_takes_any_origin(http: httpx.Client) -> None:
    answer = http.post("/v2/models/sleepy/infer", json=INFER, headers={"Origin": "http://evil.test"})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "host", ["evil.test", "evil.test:8080", "127.0.0.1.evil.test", "localhost.evil.test"]
)
def test_a_rebound_name_gets_nothing(http: httpx.Client, host: str) -> None:
    for method, path in (("GET", "/v2/health/ready"), ("GET", "/inferd/api/models"), ("POST", UNLOAD)):
        refused = http.request(method, path, headers={"Host": host})
        assert refused.status_code == 403, (path, refused.text)
        assert f"host {host!r} is not a name this server answers" in refused.json()["error"]
    answer = http.post("/v2/models/sleepy/infer", json=INFER, headers={"Host": host})
    assert answer.status_code == 403
    assert http.get(READY).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        *("localhost", "LOCALHOST:9", "127.0.0.1", "127.1.2.3:80", "[::1]:8080", "exact.test"),
        *("a.inferd.test", "app.localhost", "a.b.LOCALHOST.:8000"),  # RFC 6761: *.localhost is loopback
    ],
)
def test_loopback_and_listed_names_are_answered(http: httpx.Client, host: str) -> None:
    assert http.get("/v2/health/ready", headers={"Host": host}).status_code == 200
    assert http.post("/v2/models/sleepy/infer", json=INFER, headers={"Host": host}).status_code == 200
