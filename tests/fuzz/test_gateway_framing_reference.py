"""The gateway's HTTP/1.1 framing of the requests it forwards (`inferd.platform.gateway.proxy`), read
by h11 as the upstream.

Random requests, as an ASGI server hands them to the gateway (methods, targets with escapes and
queries, headers with duplicates, hop-by-hop ones and ``Connection`` options, bodies with
Content-Length or chunked, in pieces), are forwarded by the gateway app to an upstream on loopback
that parses what it receives with h11 and answers. Each must reach the upstream as exactly one
request (nothing before or after it on the connection) with the same method, target and body, the
client's headers less the hop-by-hop ones, in order, and the gateway's own (Host, X-Forwarded-*).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.types import Message

from inferd.engines.upstream import HOP_BY_HOP
from inferd.platform.gateway import EndpointTable, Gateway
from tests.fuzz.conftest import EXAMPLES
from tests.servers import LoopThread, loop_thread

MANY = settings(max_examples=EXAMPLES * 3, suppress_health_check=[HealthCheck.too_slow])
TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
CLIENT = ("10.1.2.3", 4567)
ANSWER = b"ok"


@dataclass
class Upstream:
    """What the upstream read: each request (method, target, headers, body), and what it could not
    read as HTTP/1.1."""

    address: str = ""
    requests: list[tuple[bytes, bytes, list[tuple[bytes, bytes]], bytes]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class UpstreamConnection(asyncio.Protocol):
    def __init__(self, seen: Upstream) -> None:
        self.seen = seen
        self.h11 = h11.Connection(h11.SERVER)
        self.transport: asyncio.Transport | None = None
        self.request: h11.Request | None = None
        self.body = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.h11.receive_data(data)
        self.pump()

    def pump(self) -> None:
        assert self.transport is not None
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                self.seen.errors.append(f"{exc} after {self.h11.trailing_data[0][:80]!r}")
                self.transport.abort()
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self.request, self.body = event, b""
            elif isinstance(event, h11.Data):
                self.body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert self.request is not None
                request = self.request
                self.seen.requests.append((request.method, request.target, list(request.headers), self.body))
                headers = [("content-length", str(len(ANSWER)))]
                out = self.h11.send(h11.Response(status_code=200, headers=headers))
                out += self.h11.send(h11.Data(data=ANSWER)) or b""  # nothing for a HEAD
                out += self.h11.send(h11.EndOfMessage())
                self.transport.write(out)
                self.h11.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    with loop_thread() as running:
        yield running


@pytest.fixture(scope="module")
def upstream(loop: LoopThread) -> Iterator[Upstream]:
    seen = Upstream()

    async def start() -> asyncio.AbstractServer:
        return await loop.loop.create_server(lambda: UpstreamConnection(seen), "127.0.0.1", 0)

    server = loop.call(start())
    seen.address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    yield seen
    server.close()


@pytest.fixture(scope="module")
def gateway(upstream: Upstream, loop: LoopThread) -> Iterator[Gateway]:
    table = EndpointTable()
    table.set("main", [(upstream.address, 100)])

    async def make() -> Gateway:
        return Gateway(table)

    app = loop.call(make())
    yield app
    loop.loop.call_soon_threadsafe(app.close)


# ---- requests as an ASGI server hands them over ----

tokens = st.text(TOKEN, min_size=1, max_size=8)
methods = st.one_of(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]), tokens)
#: Header names: ordinary ones, hop-by-hop ones, those the gateway rewrites, and random tokens.
NAMES = [
    "accept", "content-type", "x-custom", "cookie", "via", "forwarded", "authorization",
    "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection", "proxy-authorization", "proxy-authenticate", "expect",
]  # fmt: skip
header_names = st.one_of(st.sampled_from(NAMES), tokens.map(str.lower))
#: Field values as h11 and uvicorn pass them: visible ASCII and obs-text, inner spaces and tabs.
visible = st.sampled_from([bytes([code]) for code in [*range(0x21, 0x7F), *range(0x80, 0x100)]])
header_values = st.builds(
    lambda first, inner: first + inner.rstrip(b" \t") if first else b"",
    st.one_of(st.just(b""), visible),
    st.lists(st.one_of(visible, st.sampled_from([b" ", b"\t"])), max_size=12).map(b"".join),
)
#: What a Connection header may list: names of other headers, the framing ones among them.
connection_options = st.lists(
    st.one_of(
        st.sampled_from(["close", "keep-alive", "content-length", "host", "x-forwarded-for"]), header_names
    ),
    min_size=1,
    max_size=3,
).map(lambda names: ", ".join(names).encode())
PCHAR = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@"
segments = st.lists(
    st.one_of(st.text(PCHAR, max_size=6), st.sampled_from(["%20", "%2F", "%25", "%C3%A9", "%00"])), max_size=4
).map("".join)
paths = st.lists(segments, max_size=3).map(lambda parts: ("/" + "/".join(parts)).encode())
queries = st.one_of(st.just(b""), st.text(PCHAR + "/?%", max_size=12).map(str.encode))


@dataclass
class Case:
    method: str
    rest: bytes  # the target after /e/main, without the query
    query: bytes
    headers: list[tuple[bytes, bytes]]
    parts: list[bytes]  # the body as the ASGI messages bring it

    @property
    def body(self) -> bytes:
        return b"".join(self.parts)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    method = draw(methods)
    headers = draw(st.lists(st.tuples(header_names.map(str.encode), header_values), max_size=6))
    for _ in range(draw(st.integers(0, 2))):
        headers.insert(draw(st.integers(0, len(headers))), (b"connection", draw(connection_options)))
    if headers and draw(st.booleans()):  # a duplicate
        headers.insert(draw(st.integers(0, len(headers))), draw(st.sampled_from(headers)))
    if draw(st.booleans()):
        headers.insert(draw(st.integers(0, len(headers))), (b"host", b"gateway.example:8080"))
    framing = "none" if method == "HEAD" else draw(st.sampled_from(["none", "length", "chunked"]))
    if framing == "none":
        parts = [b""]
    else:
        parts = draw(st.lists(st.binary(max_size=20), min_size=1, max_size=4))
        if framing == "length":
            parts = [part for part in parts if part] or [b""]  # uvicorn sends no empty piece first
        header = (b"content-length", b"%d" % sum(map(len, parts)))
        if framing == "chunked":
            header = (b"transfer-encoding", b"chunked")
        headers.insert(draw(st.integers(0, len(headers))), header)
    return Case(method, draw(paths), draw(queries), headers, parts)


def expected_headers(case: Case, upstream: str) -> list[tuple[bytes, bytes]]:
    """The headers the upstream should read (framing headers aside), in order."""
    dropped = set(HOP_BY_HOP) | {b"host", b"expect", b"x-forwarded-for"}
    for name, value in case.headers:
        if name == b"connection":
            dropped |= {token.strip().lower() for token in value.split(b",")}
    kept = [(name, value) for name, value in case.headers if name not in dropped]
    forwarded = [value for name, value in case.headers if name == b"x-forwarded-for" and value]
    hosts = [value for name, value in case.headers if name == b"host"]
    out = [
        (b"host", upstream.encode()),
        *kept,
        (b"x-forwarded-for", b", ".join([*forwarded, CLIENT[0].encode()])),
    ]
    if hosts:
        out.append((b"x-forwarded-host", hosts[-1]))
    if not any(name == b"x-forwarded-proto" for name, _ in kept):
        out.append((b"x-forwarded-proto", b"http"))
    return [(name, value) for name, value in out if name not in (b"content-length", b"transfer-encoding")]


async def forward(app: Gateway, case: Case) -> list[Message]:
    path = b"/e/main" + case.rest
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": case.method,
        "scheme": "http",
        "path": unquote_to_bytes(path).decode("utf-8", "surrogateescape"),
        "raw_path": path,
        "query_string": case.query,
        "headers": case.headers,
        "client": CLIENT,
    }
    messages = [
        {"type": "http.request", "body": part, "more_body": index < len(case.parts) - 1}
        for index, part in enumerate(case.parts)
    ]
    sent: list[Message] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), 10)
    await asyncio.sleep(0.005)  # bytes written after the answer reach the upstream
    app.close()  # each case on a connection of its own: what one leaves behind is its own failure
    return sent


@given(case=cases())
@MANY
def test_forwarded_requests_read_the_same_in_h11(
    case: Case, gateway: Gateway, upstream: Upstream, loop: LoopThread
) -> None:
    upstream.requests.clear()
    upstream.errors.clear()
    sent = loop.call(forward(gateway, case))
    assert upstream.errors == [], upstream.errors
    assert len(upstream.requests) == 1, upstream.requests
    method, target, headers, body = upstream.requests[0]
    assert method == case.method.encode()
    assert target == case.rest + (b"?" + case.query if case.query else b"")
    assert body == case.body
    framing = [name for name, _ in headers if name in (b"content-length", b"transfer-encoding")]
    assert len(framing) <= 1 and (framing or not case.body), headers
    assert [
        (n, v) for n, v in headers if n not in (b"content-length", b"transfer-encoding")
    ] == expected_headers(case, upstream.address)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert b"".join(message.get("body", b"") for message in sent[1:]) == (
        b"" if case.method == "HEAD" else ANSWER
    )
