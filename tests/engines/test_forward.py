"""The port of a server on a shared Ray cluster, forwarding to its application at a prefix of the
cluster's proxy (`inferd.engines.forward`), here in front of a plain ASGI app standing for the proxy:
the path under the prefix with its query, the method, headers and body go there and the answer comes
back; a body over the limit is 413, a proxy that does not answer 502 naming the application. (Through
Ray itself: tests/platform/test_ray_service.py.)"""

from __future__ import annotations

import httpx
import orjson
from starlette.types import Receive, Scope, Send

from inferd.config.settings import Settings
from inferd.engines.forward import Forward, serving
from tests.servers import free_port, serve_asgi

SETTINGS = Settings(host="127.0.0.1")


async def proxy(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with what it was sent."""
    body = b""
    more = True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    seen = {
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode(),
        "headers": {name.decode(): value.decode() for name, value in scope["headers"]},
        "body": body.decode(),
    }
    await send({"type": "http.response.start", "status": 201, "headers": [(b"x-proxy", b"yes")]})
    await send({"type": "http.response.body", "body": orjson.dumps(seen)})


def test_a_request_goes_under_the_prefix_and_its_answer_comes_back() -> None:
    with serve_asgi(proxy) as upstream:
        address = upstream.removeprefix("http://")
        with serving(Forward(address, "/inferd-iris-svc-1", "inferd-iris-svc-1", 64), SETTINGS, 0) as port:
            url = f"http://127.0.0.1:{port}"
            answer = httpx.post(f"{url}/v2/models/m/infer?x=1", content=b'{"a": 1}', headers={"x-mine": "1"})
            assert answer.status_code == 201 and answer.headers["x-proxy"] == "yes"
            seen = answer.json()
            assert (seen["method"], seen["path"], seen["query"]) == (
                "POST",
                "/inferd-iris-svc-1/v2/models/m/infer",
                "x=1",
            )
            assert seen["body"] == '{"a": 1}' and seen["headers"]["x-mine"] == "1"
            assert seen["headers"]["host"] == address and seen["headers"]["content-length"] == "8"

            too_large = httpx.post(f"{url}/v2/models/m/infer", content=b"x" * 65)
            assert too_large.status_code == 413 and "limit of 64 bytes" in too_large.text


def test_a_proxy_that_does_not_answer_is_a_502_naming_the_application() -> None:
    with serving(Forward(f"127.0.0.1:{free_port()}", "/app", "inferd-iris-svc-1", 64), SETTINGS, 0) as port:
        answer = httpx.get(f"http://127.0.0.1:{port}/v2/health/ready")
    assert answer.status_code == 502 and "'inferd-iris-svc-1' did not answer" in answer.text
    assert "127.0.0.1" not in answer.text
