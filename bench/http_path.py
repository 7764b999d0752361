"""CPU per request of the server's own Python, in one process, without sockets or load generator:
uvicorn's httptools connection fed the iris V2 request over a fake transport, answered by the floor
(bench/floor_app.py), inferd through the full ASGI stack (``inferd-app``), or inferd with its
connection fast path (``inferd``, what ``inferd serve`` runs). Issue 26's profiler harness: the
kernel, wrk and the other processes are out of the figure, so it shows what a change to the
request path saves even on a busy machine, and ``--profile`` prints where the time goes.
``--trivial`` replaces the model's work with a constant answer, leaving only the serving path.

    .venv/bin/python bench/http_path.py [--requests 5000] [--trivial] [--profile inferd]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from typing import Any

import numpy as np
import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState
from v2_iris import BODY, EXAMPLE, INFER_PATH

REQUEST = (
    f"POST {INFER_PATH} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\n"
    f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
).encode() + BODY
SERVERS = ("floor", "inferd-app", "inferd")
ROUNDS = 5
TRIVIAL = {"label": np.array([0]), "probabilities": np.zeros((1, 3), np.float32)}


class Transport(asyncio.Transport):
    """Keeps what the server writes; `written` resolves on each write."""

    def __init__(self) -> None:
        super().__init__()
        self.written: asyncio.Future[None] | None = None
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: Any) -> None:
        if self.written is not None and not self.written.done():
            self.written.set_result(None)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


async def floor_config(trivial: bool) -> uvicorn.Config:
    import floor_app
    import peer_iris

    if trivial:
        peer_iris.predict = lambda classifier, features: TRIVIAL
    config = uvicorn.Config(floor_app.app, http=HttpToolsProtocol, lifespan="off", log_config=None)
    config.load()
    return config


async def inferd_config(trivial: bool, fast: bool) -> uvicorn.Config:
    from inferd.config.settings import Settings
    from inferd.engines.http import uvicorn_config
    from inferd.server.app import build_runtime, create_app, fast_infer_of

    settings = Settings(target=str(EXAMPLE), grpc_enabled=False)
    runtime = build_runtime(settings)
    await runtime.registry.load_all()
    if trivial:
        runtime.registry.ready_entry("iris", None).model.predict = lambda inputs: TRIVIAL  # type: ignore[method-assign]
    app = create_app(runtime)
    config = uvicorn_config(settings, app, 1000, fast_infer_of(app) if fast else None)
    config.load()
    return config


async def measure(server: str, requests: int, trivial: bool, profile: bool) -> float:
    """The least CPU microseconds per request over ROUNDS rounds of ``requests``."""
    if server == "floor":
        config = await floor_config(trivial)
    else:
        config = await inferd_config(trivial, fast=server == "inferd")
    state = ServerState()
    protocol = config.http_protocol_class(config=config, server_state=state, app_state={})
    transport = Transport()
    protocol.connection_made(transport)
    loop = asyncio.get_running_loop()

    async def one() -> None:
        transport.written = loop.create_future()
        protocol.data_received(REQUEST)
        await transport.written
        while state.tasks:
            await asyncio.sleep(0)

    for _ in range(300):
        await one()
    profiler = cProfile.Profile() if profile else None
    best = float("inf")
    for _ in range(ROUNDS):
        if profiler is not None:
            profiler.enable()
        started = time.process_time()
        for _ in range(requests):
            await one()
        best = min(best, (time.process_time() - started) / requests * 1e6)
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--trivial", action="store_true", help="a constant answer, not the model's work")
    parser.add_argument("--profile", choices=SERVERS, help="profile this server instead of timing them all")
    parser.add_argument("--server", choices=SERVERS, help=argparse.SUPPRESS)  # one per process
    args = parser.parse_args()
    if args.server or args.profile:
        server = args.server or args.profile
        us = uvloop.run(measure(server, args.requests, args.trivial, bool(args.profile)))
        print(f"{server} {us:.1f}")
        return
    import subprocess

    results = {}
    for server in SERVERS:  # each in a process of its own: no module or model state shared
        command = [sys.executable, __file__, "--server", server, "--requests", str(args.requests)]
        done = subprocess.run(
            [*command, *(["--trivial"] if args.trivial else [])], capture_output=True, text=True, check=True
        )
        results[server] = float(done.stdout.split()[-1])
    model = "a constant answer" if args.trivial else "the iris model"
    print(f"CPU us per request of the server's Python ({model}), least of {ROUNDS} rounds:")
    for server, us in results.items():
        print(f"  {server:11s} {us:7.1f}  {us / results['floor']:.2f}x floor")


if __name__ == "__main__":
    os.chdir(EXAMPLE.parent.parent)
    main()
