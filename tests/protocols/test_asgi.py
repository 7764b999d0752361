"""The bare-endpoint helpers read a request as Starlette's request objects do, so a route answers the
same whether the server calls it directly or through Starlette."""

from __future__ import annotations

from starlette.datastructures import Headers

from inferd.protocols.asgi import header


def test_a_repeated_header_reads_as_starlettes_first_value() -> None:
    raw = [(b"content-type", b"application/json"), (b"x-a", b"one"), (b"x-a", b"two")]
    scope = {"type": "http", "headers": raw}
    assert header(scope, b"x-a") == Headers(raw=raw).get("x-a") == "one"
    assert header(scope, b"content-type") == "application/json"
    assert header(scope, b"x-missing") is None
