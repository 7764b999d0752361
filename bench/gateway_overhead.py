"""Issue 24's targets for the endpoints' data paths: the embedded gateway at concurrency 16 at least
0.6x the req/s of calling the service directly, at concurrency 1 at most 0.5 ms more p50; HAProxy
(when installed) at least 0.9x at concurrency 16.

Serves ``examples/iris`` (``inferd serve``, one worker, no gRPC) and an embedded gateway in a process
of its own (``inferd.platform.gateway.serve_gateway`` on uvloop, endpoint ``iris`` routing 100% to
that server) and, when haproxy is installed, HAProxy configured by the platform's HAProxy data path
for the same endpoint, then loads ``/v2/models/iris/infer`` directly and ``/e/iris/v2/models/iris/infer``
through each with wrk (bench/v2_iris.lua), alternating the two in each round so that other
load on the machine hits both alike, and prints req/s, p50 and p99 (medians over the rounds) and the
ratios. wrk, the gateway and the server share the machine's cores.

    .venv/bin/python bench/gateway_overhead.py [--seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.loadgen import LUA, RESULT, start_inferd  # noqa: E402

if TYPE_CHECKING:
    from inferd.platform.haproxy import HAProxyPath

IRIS = ROOT / "examples" / "iris"
INFER_PATH = "/v2/models/iris/infer"
BODY = '{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[[5.1,3.5,1.4,0.2]]}]}'
GATEWAY_READY = re.compile(r"gateway ready: (http://\S+)")
RATIO_TARGET = 0.6  # gateway req/s / direct req/s at concurrency 16
HAPROXY_RATIO_TARGET = 0.9
ADDED_P50_TARGET_MS = 0.5  # at concurrency 1


def run_gateway(upstream: str) -> None:
    """The gateway process: endpoint ``iris`` → ``upstream`` on a free port, until SIGTERM."""
    import uvloop

    from inferd.platform.gateway import EndpointTable, serve_gateway

    async def main() -> None:
        table = EndpointTable()
        table.set("iris", [(upstream, 100)])
        server = await serve_gateway(table, "127.0.0.1", 0)
        print(f"gateway ready: http://127.0.0.1:{server.port}", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.stop()

    uvloop.run(main())


@contextmanager
def gateway_process(
    upstream: str, script: str = __file__, ready: re.Pattern[str] = GATEWAY_READY
) -> Iterator[str]:
    """``script --gateway upstream`` until it prints ``ready``; yields what ``ready`` matched."""
    command = [sys.executable, script, "--gateway", upstream]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            match = ready.search(line)
            if match:
                yield match.group(1)
                return
        raise SystemExit(f"the gateway exited with {process.wait()} before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def haproxy_process(upstream: str, grpc: str | None = None) -> Iterator[HAProxyPath | None]:
    """HAProxy serving endpoint ``iris`` → ``upstream`` as the platform configures it (and, with
    ``grpc``, gRPC calls → that gRPC address on its ``grpc_port``); None when haproxy is not
    installed."""
    import shutil
    import tempfile

    from inferd.engines.sockets import free_ports
    from inferd.platform.haproxy import HAProxyPath

    if shutil.which("haproxy") is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="inferd-bench-haproxy-") as folder:
        port, grpc_port = free_ports("127.0.0.1", 2)
        path = HAProxyPath(Path(folder), "127.0.0.1", port, grpc_port=grpc_port if grpc else None)

        async def start() -> None:
            await path.start()
            await path.route("iris", [(upstream, 100)], None, {upstream: grpc} if grpc else None)

        asyncio.run(start())
        try:
            yield path
        finally:
            asyncio.run(path.close())


@contextmanager
def iris_server() -> Iterator[str]:
    process, url = start_inferd(str(IRIS))
    try:
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def wrk(url: str, concurrency: int, seconds: int) -> dict[str, float]:
    """One wrk run: req/s, p50 and p99 in ms; any failed request aborts the benchmark."""
    threads = 1 if concurrency == 1 else 2
    command = ["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "-s", str(LUA), url]
    env = {**os.environ, "V2_IRIS_BODY": BODY}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    match = RESULT.search(done.stdout)
    assert match is not None, done.stdout
    raw = json.loads(match.group(1))
    failures = sum(
        raw[key] for key in ("non_2xx", "connect_errors", "read_errors", "write_errors", "timeouts")
    )
    if failures:
        raise SystemExit(f"{url}: {failures} failed requests")
    return {
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p50": raw["p50_us"] / 1000,
        "p99": raw["p99_us"] / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="per wrk run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gateway", metavar="UPSTREAM", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.gateway:
        run_gateway(options.gateway)
        return
    with (
        iris_server() as direct,
        gateway_process(direct.removeprefix("http://")) as gateway,
        haproxy_process(direct.removeprefix("http://")) as haproxy,
    ):
        urls = {"direct": f"{direct}{INFER_PATH}", "gateway": f"{gateway}/e/iris{INFER_PATH}"}
        if haproxy is not None:
            urls["haproxy"] = f"http://127.0.0.1:{haproxy.port}/e/iris{INFER_PATH}"
        for url in urls.values():
            wrk(url, 16, 3)  # warm-up
        found: dict[tuple[str, int], list[dict[str, float]]] = {}
        for _ in range(options.rounds):
            for concurrency in (16, 1):
                for name, url in urls.items():
                    found.setdefault((name, concurrency), []).append(wrk(url, concurrency, options.seconds))
    median = {
        key: {metric: statistics.median(run[metric] for run in runs) for metric in ("rps", "p50", "p99")}
        for key, runs in found.items()
    }
    print(f"{'':<10}{'c':>3}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for (name, concurrency), value in median.items():
        print(f"{name:<10}{concurrency:>3}{value['rps']:>10.0f}{value['p50']:>9.3f}{value['p99']:>9.3f}")
    ratio = median["gateway", 16]["rps"] / median["direct", 16]["rps"]
    added = median["gateway", 1]["p50"] - median["direct", 1]["p50"]
    c1_ratio = median["gateway", 1]["rps"] / median["direct", 1]["rps"]
    print(
        f"c16 req/s gateway / direct: {ratio:.3f} (target >= {RATIO_TARGET}) "
        f"{'PASS' if ratio >= RATIO_TARGET else 'FAIL'}"
    )
    print(
        f"c1 p50 added by the gateway: {added:.3f} ms (target <= {ADDED_P50_TARGET_MS}) "
        f"{'PASS' if added <= ADDED_P50_TARGET_MS else 'FAIL'}; c1 req/s ratio {c1_ratio:.3f}"
    )
    if ("haproxy", 16) in median:
        proxied = median["haproxy", 16]["rps"] / median["direct", 16]["rps"]
        print(
            f"c16 req/s haproxy / direct: {proxied:.3f} (target >= {HAPROXY_RATIO_TARGET}) "
            f"{'PASS' if proxied >= HAPROXY_RATIO_TARGET else 'FAIL'}; c1 p50 added "
            f"{median['haproxy', 1]['p50'] - median['direct', 1]['p50']:.3f} ms"
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"{options.rounds} rounds x {options.seconds} s per run; {os.cpu_count()} cores; load average {load}"
    )


if __name__ == "__main__":
    main()
