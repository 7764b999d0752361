"""Issue 27's target for tracing: with tracing on (every request sampled, spans exported over
OTLP/HTTP to a local receiver) at least 0.85x the req/s of tracing off, at concurrency 16.

Serves ``examples/iris`` twice (``inferd serve``, one worker, no gRPC): once as is, once with
``--tracing`` exporting to an OTLP/HTTP receiver on loopback (a thread of this script that takes each
``POST /v1/traces`` and counts its bytes), then loads ``/v2/models/iris/infer`` with wrk
(bench/v2_iris.lua), alternating the two in each round so that other load on the machine hits both
alike, and prints req/s (medians over the rounds), the ratio and the target as PASS/FAIL. wrk, the
servers and the receiver share the machine's cores.

    .venv/bin/python bench/tracing_overhead.py [--seconds 10] [--rounds 2] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.loadgen import start_inferd, wrk  # noqa: E402

IRIS = ROOT / "examples" / "iris"
INFER_PATH = "/v2/models/iris/infer"
BODY = '{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[[5.1,3.5,1.4,0.2]]}]}'
RATIO_TARGET = 0.85  # tracing on req/s / tracing off req/s at concurrency 16


class Received:
    def __init__(self) -> None:
        self.posts = self.bytes = 0
        self.lock = threading.Lock()


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP endpoint on loopback that answers every export with an empty success."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with received.lock:
                received.posts += 1
                received.bytes += len(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def iris_server(env: dict[str, str], *args: str) -> Iterator[str]:
    # this tree's inferd (python -m), whichever one the environment has installed
    env = {**env, "PYTHONPATH": str(ROOT)}
    process, url = start_inferd(str(IRIS), *args, env=env, inferd=(sys.executable, "-m", "inferd"))
    try:
        yield url + INFER_PATH
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--exporter",
        default="otlp",
        help="OTEL_TRACES_EXPORTER of the traced server (none: spans made, not sent)",
    )
    options = parser.parse_args()
    plain = {key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "INFERD_"))}
    with otlp_receiver() as (endpoint, received):
        traced = {**plain, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "bench"}
        traced["OTEL_TRACES_EXPORTER"] = options.exporter
        with iris_server(plain) as off_url, iris_server(traced, "--tracing") as on_url:
            runs: dict[str, list[float]] = {"off": [], "on": []}
            for url in (off_url, on_url):  # warm-up
                wrk(url, BODY, options.concurrency, 2)
            for _ in range(options.rounds):
                for name, url in (("off", off_url), ("on", on_url)):
                    runs[name].append(wrk(url, BODY, options.concurrency, options.seconds))
    off, on = statistics.median(runs["off"]), statistics.median(runs["on"])
    ratio = on / off
    print(f"iris V2 REST, concurrency {options.concurrency}, {options.rounds} x {options.seconds}s, medians")
    print(f"  tracing off  {off:10.0f} req/s")
    print(f"  tracing on   {on:10.0f} req/s  ({received.posts} OTLP exports, {received.bytes / 1e6:.1f} MB)")
    verdict = "PASS" if ratio >= RATIO_TARGET else "FAIL"
    print(f"  on / off     {ratio:10.3f}  (target >= {RATIO_TARGET}) {verdict}")


if __name__ == "__main__":
    main()
