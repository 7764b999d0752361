"""What passes through the gateway unchanged, what it adds and removes, and its JSON errors."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
from prometheus_client import REGISTRY

from inferd.platform.gateway import EndpointTable, Limits
from inferd.server.auth import Tokens
from tests.platform.gateway.conftest import Upstream, run_gateway, serve_upstream

BINARY = bytes(range(256)) * 4096  # 1 MiB of every byte value


def test_path_query_and_method_pass_through(
    table: EndpointTable, alpha: Upstream, http: httpx.Client
) -> None:
    table.set("ep", [(alpha.address, 100)])
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        answer = http.request(method, "/e/ep/v2/models/m%2Fx/infer?a=1&b=%20")
        assert answer.status_code == 200 and answer.text == "alpha", method
    assert alpha.hits == ["/v2/models/m/x/infer"] * 6
    answer = http.get("/e/ep/headers?a=1&b=%20")
    assert answer.json()["query"] == "a=1&b=%20"
    assert http.get("/e/ep").text == "alpha"
    assert alpha.hits[-1] == "/"


def test_headers_pass_through_but_hop_by_hop_ones(
    table: EndpointTable, alpha: Upstream, http: httpx.Client
) -> None:
    table.set("ep", [(alpha.address, 100)])
    answer = http.get(
        "/e/ep/headers",
        headers={
            "x-custom": "kept",
            "x-request-id": "abc",
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # a trace goes on
            "keep-alive": "timeout=5",
            "connection": "keep-alive, x-private",
            "x-private": "dropped",
            "te": "trailers",
            "x-forwarded-for": "10.0.0.1",
            "host": "models.example.com",
        },
    )
    assert answer.status_code == 200
    seen = dict(answer.json()["headers"])
    assert seen["x-custom"] == "kept" and seen["x-request-id"] == "abc"
    assert seen["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert seen["host"] == alpha.address
    assert seen["x-forwarded-host"] == "models.example.com"
    assert seen["x-forwarded-for"] == "10.0.0.1, 127.0.0.1"
    for hop in ("keep-alive", "connection", "x-private", "te", "transfer-encoding"):
        assert hop not in seen
    assert answer.headers["x-upstream"] == "alpha"  # the answer's headers come back
    assert answer.headers.get_list("date") and len(answer.headers.get_list("date")) == 1


def test_binary_and_multipart_bodies_are_byte_exact(
    table: EndpointTable, alpha: Upstream, http: httpx.Client
) -> None:
    table.set("ep", [(alpha.address, 100)])
    answer = http.post("/e/ep/echo", content=BINARY, headers={"content-type": "application/octet-stream"})
    assert answer.status_code == 200 and answer.content == BINARY
    assert alpha.bodies[-1] == BINARY
    files = {"image": ("cat.png", BINARY[:70_000], "image/png")}
    answer = http.post("/e/ep/echo", files=files, data={"label": "cat"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert answer.content == alpha.bodies[-1]
    assert BINARY[:70_000] in answer.content and b'name="label"' in answer.content


def test_a_chunked_request_body_streams_through(
    table: EndpointTable, alpha: Upstream, http: httpx.Client
) -> None:
    table.set("ep", [(alpha.address, 100)])

    def parts() -> Iterator[bytes]:
        for start in range(0, len(BINARY), 100_000):
            yield BINARY[start : start + 100_000]

    answer = http.post("/e/ep/echo", content=parts(), headers={"content-type": "application/x-tensor"})
    assert answer.status_code == 200 and answer.content == BINARY
    assert answer.headers["content-type"] == "application/x-tensor"


def test_chunked_and_empty_answers_and_statuses(
    table: EndpointTable, alpha: Upstream, http: httpx.Client
) -> None:
    table.set("ep", [(alpha.address, 100)])
    streamed = http.get("/e/ep/stream")
    assert streamed.content == b"".join(b"%04d" % number for number in range(100))
    assert streamed.headers["transfer-encoding"] == "chunked"
    for code in (201, 204, 304, 400, 418, 500, 503):
        assert http.get(f"/e/ep/status/{code}").status_code == code
    head = http.head("/e/ep/hello")
    assert head.status_code == 200 and head.headers["content-length"] == "5" and head.content == b""
    assert http.get("/e/ep/close").text == "alpha"  # the upstream closes this connection: not reused
    assert http.get("/e/ep/hello").text == "alpha"


def test_idle_connections_the_upstream_closed_are_not_used() -> None:
    table = EndpointTable()
    with serve_upstream("brief", keep_alive=1) as brief, run_gateway(table) as gateway:
        table.set("ep", [(brief.address, 100)])
        with gateway.http() as http:
            assert http.post("/e/ep/echo", content=b"one").content == b"one"
            time.sleep(1.5)  # the upstream closes the idle connection
            assert http.post("/e/ep/echo", content=b"two").content == b"two"


def test_unknown_endpoint_is_404_json(table: EndpointTable, alpha: Upstream, http: httpx.Client) -> None:
    table.set("ep", [(alpha.address, 100)])
    answer = http.get("/e/nope/v2/health/ready")
    assert answer.status_code == 404 and answer.json() == {"error": "no endpoint named 'nope'"}
    assert http.get("/v2/health/ready").status_code == 404
    table.remove("ep")
    assert http.get("/e/ep/").status_code == 404


def test_dead_upstream_is_502_naming_the_endpoint_only(
    table: EndpointTable, alpha: Upstream, down: str, http: httpx.Client
) -> None:
    table.set("broken", [(down, 100)])
    table.set("ep", [(alpha.address, 100)])
    before = REGISTRY.get_sample_value(
        "inferd_gateway_requests_total", {"endpoint": "broken", "upstream": down, "code": "502"}
    )
    answer = http.post("/e/broken/v2/models/m/infer", content=b"{}")
    assert answer.status_code == 502
    assert answer.json() == {"error": "endpoint 'broken': its service is unavailable"}
    assert down.rsplit(":", 1)[1] not in answer.text
    assert http.get("/e/ep/").text == "alpha"  # others keep working
    after = REGISTRY.get_sample_value(
        "inferd_gateway_requests_total", {"endpoint": "broken", "upstream": down, "code": "502"}
    )
    assert after == (before or 0) + 1


def test_an_upstream_that_stopped_is_502(table: EndpointTable, http: httpx.Client) -> None:
    with serve_upstream("doomed") as doomed:
        table.set("ep", [(doomed.address, 100)])
        assert http.get("/e/ep/").text == "doomed"
    answer = http.get("/e/ep/")  # the idle connection was closed by the upstream's shutdown
    assert answer.status_code == 502


def test_no_weight_is_503(table: EndpointTable, alpha: Upstream, http: httpx.Client) -> None:
    table.set("ep", [(alpha.address, 0)])
    answer = http.get("/e/ep/")
    assert answer.status_code == 503 and "no service with weight" in answer.json()["error"]
    assert answer.headers["retry-after"] == "1"


def test_bodies_over_the_limit_are_413(alpha: Upstream) -> None:
    table = EndpointTable()
    table.set("ep", [(alpha.address, 100)])
    with run_gateway(table, limits=Limits(max_body_size=1000)) as gateway, gateway.http() as http:
        assert http.post("/e/ep/echo", content=b"x" * 1000).status_code == 200
        declared = http.post("/e/ep/echo", content=b"x" * 1001)
        assert declared.status_code == 413
        assert declared.json() == {"error": "request body is larger than the limit of 1000 bytes"}
        streamed = http.post("/e/ep/echo", content=iter([b"x" * 600, b"x" * 600]))
        assert streamed.status_code == 413
        assert http.post("/e/ep/echo", content=b"ok").content == b"ok"
    assert all(len(body) <= 1000 for body in alpha.bodies)


def test_bearer_tokens_are_checked_and_not_forwarded(alpha: Upstream) -> None:
    table = EndpointTable()
    table.set("ep", [(alpha.address, 100)])
    options = {"tokens": Tokens(["s3cret"]), "open_paths": ["/e/ep/v2/health/live"]}
    with run_gateway(table, **options) as gateway, gateway.http() as http:
        refused = http.get("/e/ep/headers")
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert http.get("/e/ep/headers", headers={"authorization": "Bearer wrong"}).status_code == 401
        answer = http.get("/e/ep/headers", headers={"authorization": "Bearer s3cret"})
        assert answer.status_code == 200
        assert "authorization" not in dict(answer.json()["headers"])
        assert http.get("/e/ep/v2/health/live").status_code == 200


def test_upstream_token_replaces_the_clients(alpha: Upstream) -> None:
    table = EndpointTable()
    table.set("ep", [(alpha.address, 100)])
    with run_gateway(table, upstream_token="inner") as gateway, gateway.http() as http:
        answer = http.get("/e/ep/headers", headers={"authorization": "Bearer outer"})
        assert dict(answer.json()["headers"])["authorization"] == "Bearer inner"


def test_a_dedicated_gateway_forwards_every_path(alpha: Upstream) -> None:
    table = EndpointTable()
    table.set("ep", [(alpha.address, 100)])
    with run_gateway(table, endpoint="ep") as gateway, gateway.http() as http:
        assert http.post("/e/x/predict?q=1", content=b"a").text == "alpha"
        assert http.get("/api/v1.0/predictions").text == "alpha"
    assert alpha.hits == ["/e/x/predict", "/api/v1.0/predictions"]
