"""Issue 27's target: payload logging on costs at most 10% of the req/s of iris over V2 REST at
concurrency 16 (ratio on / off at least 0.90).

Serves ``examples/iris`` from this checkout (one worker, no gRPC) twice: without payload logging, and
with ``INFERD_PAYLOAD_LOG_URL`` pointing at a CloudEvents sink on loopback (a bare asyncio
protocol in a process of its own, answering 202 and counting the events). Loads each with wrk
(``bench/v2_iris.lua``), a warm-up then a measured run, alternating rounds between the two so that
load from other processes hits both alike. Prints req/s and p99 of each, the CPU time inferd and
the sink spent per request (inferd's own cost, and what the sink takes from the shared cores), the
events the sink got and the events inferd dropped, and the ratio with PASS or FAIL.

    .venv/bin/python bench/payload_logging_overhead.py [--rounds 3] [--duration 10] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"inferd ready: (http://\S+)")
LUA = ROOT / "bench" / "v2_iris.lua"
TARGET = 0.90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_sink(port: int) -> None:
    """The sink: answers every POST 202 and ``GET`` with how many events it got. A bare asyncio
    protocol with httptools' parser, not an ASGI app: in production the sink runs on machines of its
    own, here it shares the cores with inferd, so the less it takes from them the less it skews the
    ratio (its CPU per request is printed all the same)."""
    import asyncio

    import httptools

    count = 0
    accepted = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"

    class Sink(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.parser = httptools.HttpRequestParser(self)

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_message_complete(self) -> None:
            nonlocal count
            if self.parser.get_method() == b"POST":
                count += 1
                self.transport.write(accepted)
            else:
                body = str(count).encode()
                self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Sink, "127.0.0.1", port)
        await server.serve_forever()

    asyncio.run(main())


@contextmanager
def sink() -> Iterator[tuple[str, int]]:
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--sink", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                httpx.get(url)
                break
            except httpx.TransportError:
                subprocess.run(["sleep", "0.1"], check=True)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def served(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    command = [sys.executable, "-m", "inferd", "serve", "examples/iris", "--port", "0", "--no-grpc"]
    environment = {**os.environ, "INFERD_LOG_LEVEL": "warning", **env}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=environment)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            match = READY.search(line)
            if match:
                yield match.group(1), process.pid
                return
        raise SystemExit(f"inferd exited with {process.wait()} before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


def wrk(url: str, concurrency: int, seconds: int) -> dict[str, Any]:
    command = [
        "wrk",
        "-t2",
        f"-c{concurrency}",
        f"-d{seconds}s",
        "-s",
        str(LUA),
        url + "/v2/models/iris/infer",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    for line in done.stdout.splitlines():
        if line.startswith("V2_IRIS_RESULT "):
            found: dict[str, Any] = json.loads(line.removeprefix("V2_IRIS_RESULT "))
            errors = sum(found[key] for key in ("connect_errors", "read_errors", "write_errors", "non_2xx"))
            if errors:
                raise SystemExit(f"wrk saw {errors} errors: {found}")
            found["rps"] = found["requests"] / (found["duration_us"] / 1e6)
            return found
    raise SystemExit(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")


def dropped(url: str) -> float:
    text = httpx.get(url + "/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("inferd_payload_log_dropped_total{")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sink", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sink is not None:
        run_sink(args.sink)
        return
    results: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    with sink() as (sink_url, sink_pid):
        for round_ in range(args.rounds):
            for name, env in (("off", {}), ("on", {"INFERD_PAYLOAD_LOG_URL": sink_url})):
                with served(env) as (url, pid):
                    wrk(url, args.concurrency, args.warmup)
                    before, cpu_before, sink_before = (
                        int(httpx.get(sink_url).text),
                        cpu_seconds(pid),
                        cpu_seconds(sink_pid),
                    )
                    result = wrk(url, args.concurrency, args.duration)
                    result["cpu_us"] = (cpu_seconds(pid) - cpu_before) / result["requests"] * 1e6
                    result["sink_us"] = (cpu_seconds(sink_pid) - sink_before) / result["requests"] * 1e6
                    result["events"] = int(httpx.get(sink_url).text) - before
                    result["dropped"] = dropped(url) if name == "on" else 0
                    results[name].append(result)
                    print(
                        f"round {round_ + 1} {name:>3}: {result['rps']:8.0f} req/s  p99 "
                        f"{result['p99_us'] / 1000:6.2f} ms  CPU us/req inferd {result['cpu_us']:4.0f} "
                        f"sink {result['sink_us']:3.0f}  "
                        f"events {result['events']:7d}  "
                        f"dropped (whole run) {result['dropped']:.0f}",
                        flush=True,
                    )
    off = statistics.median(r["rps"] for r in results["off"])
    on = statistics.median(r["rps"] for r in results["on"])
    ratio = on / off
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    cpu_off = statistics.median(r["cpu_us"] for r in results["off"])
    cpu_on = statistics.median(r["cpu_us"] for r in results["on"])
    print(f"median inferd CPU per request off {cpu_off:.0f} us, on {cpu_on:.0f} us: {cpu_on / cpu_off:.3f}x")
    print(f"median req/s off {off:.0f}, on {on:.0f}: ratio {ratio:.3f} (target >= {TARGET}) {verdict}")


if __name__ == "__main__":
    main()
