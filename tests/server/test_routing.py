"""`IndexedRouter` and `DirectRoutes` answer every request as Starlette's own router would, only sooner."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from inferd.core.errors import InvalidInput
from inferd.protocols import asgi
from inferd.server.errors import EXCEPTION_HANDLERS, TYPED_ERROR_HANDLERS
from inferd.server.routing import DirectRoutes, IndexedRouter, direct_routes, leading_routes
from tests.servers import serve_asgi


class Echo:
    """A bare ASGI endpoint: answers how it was reached, or fails as the body asks."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await asgi.read_body(receive)
        if body == b"invalid":
            raise InvalidInput("the body says so")
        if body == b"crash":
            raise RuntimeError("/secret/path went wrong")
        routed = "route" in scope  # the router records the route it picked; the direct call skips it
        answer = {"routed": routed, **({"params": scope["path_params"]} if scope.get("path_params") else {})}
        await asgi.send_response(send, 200, orjson.dumps(answer), [])


async def hello(request: Request) -> Response:
    return JSONResponse({"hello": request.url.path})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    echo = Echo()
    routes = [
        Route("/first/{name}", echo, methods=["POST"]),  # leading: tried directly, before the others
        Route("/v2/{anything:path}", hello, methods=["GET"]),  # an earlier pattern that takes /v2/echo
        Route("/echo", echo, methods=["POST"]),
        Route("/v2/echo", echo, methods=["POST"]),
        Route("/routed/{name}", echo, methods=["POST"]),
        Route("/hello", hello),
    ]
    router = IndexedRouter(routes)
    direct = direct_routes(router.fixed)
    assert sorted(direct) == ["/echo"]  # not the shadowed /v2/echo, nor a function endpoint
    leading = leading_routes(router.routes)
    assert [route.path for route in leading] == ["/first/{name}"]  # up to the first function endpoint
    middleware = [Middleware(DirectRoutes, routes=direct, handlers=TYPED_ERROR_HANDLERS, leading=leading)]
    app = Starlette(middleware=middleware, exception_handlers=EXCEPTION_HANDLERS)
    app.router = router
    with serve_asgi(app) as base:
        yield base


def test_a_bare_endpoint_on_a_fixed_path_is_called_directly(url: str) -> None:
    assert httpx.post(f"{url}/echo", content=b"hi").json() == {"routed": False}
    assert httpx.post(f"{url}/routed/x", content=b"hi").json() == {"routed": True, "params": {"name": "x"}}
    assert httpx.get(f"{url}/hello").json() == {"hello": "/hello"}


def test_a_leading_bare_route_is_called_directly_with_its_path_parameters(url: str) -> None:
    assert httpx.post(f"{url}/first/x", content=b"hi").json() == {"routed": False, "params": {"name": "x"}}
    answer = httpx.get(f"{url}/first/x")  # its method does not match: the router answers
    assert answer.status_code == 405
    assert httpx.post(f"{url}/first/x", content=b"invalid").status_code == 400


def test_route_order_still_decides(url: str) -> None:
    # /v2/echo's own route comes after a pattern that matches it (for GET): the router decides
    assert httpx.get(f"{url}/v2/echo").json() == {"hello": "/v2/echo"}
    assert httpx.post(f"{url}/v2/echo", content=b"hi").json() == {"routed": True}


def test_a_method_the_route_does_not_take_gets_the_routers_405(url: str) -> None:
    answer = httpx.put(f"{url}/echo", content=b"hi")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"


@pytest.mark.parametrize("body", [b"invalid", b"crash"])
def test_errors_are_answered_as_on_a_routed_path(url: str, body: bytes) -> None:
    direct = httpx.post(f"{url}/echo", content=body)
    routed = httpx.post(f"{url}/routed/x", content=body)
    assert direct.status_code == routed.status_code == (400 if body == b"invalid" else 500)
    assert direct.json() == routed.json()
    assert "/secret/path" not in direct.text
    assert httpx.post(f"{url}/echo", content=b"hi").json() == {"routed": False}  # still serving
