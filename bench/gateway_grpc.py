"""Issue 24's endpoint-overhead targets for gRPC: V2 ``ModelInfer`` at concurrency 16 through the
embedded gateway's gRPC side at least 0.6x the req/s of calling the service's gRPC port directly,
and through HAProxy's gRPC frontend (when haproxy is installed) at least 0.9x.

Serves ``examples/iris`` (``inferd serve``, one worker, gRPC on), the gRPC gateway in a process of
its own (``serve_grpc_gateway`` on uvloop, endpoint ``iris`` routing 100% to that server, called
without ``inferd-endpoint`` metadata: the only endpoint) and HAProxy as the platform configures it,
then loads each with h2load as bench/grpc_load.py does (the same request body, the same checks:
every answer must be the model's), direct and the proxies in turn within each round, and prints
req/s, p50 and p99 (medians over the rounds) and the ratios, each round's too. h2load, the proxies
and the server share the machine's cores.

    .venv/bin/python bench/gateway_grpc.py [--duration 10] [--warmup 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import sys
import tempfile
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_overhead import gateway_process, haproxy_process
from grpc_load import PEERS, Result, Served, check, framed, h2load, request_message
from v2_iris import ROOT, ServerSpec, ensure_model, expected_answer, machine_lines, serving

READY = re.compile(r"grpc gateway ready: (\d+)")
TARGETS = {"gateway": 0.6, "haproxy": 0.9}  # req/s over direct at c16


def run_gateway(upstream: str) -> None:
    """The gateway process: endpoint ``iris`` → the gRPC server at ``upstream``, until SIGTERM."""
    import uvloop

    from inferd.platform.gateway import EndpointTable
    from inferd.platform.gateway.grpc_proxy import serve_grpc_gateway

    async def main() -> None:
        table = EndpointTable()
        table.set("iris", [("127.0.0.1:1", 100)], None, {"127.0.0.1:1": upstream})
        server = await serve_grpc_gateway(table, "127.0.0.1", 0)
        print(f"grpc gateway ready: {server.port}", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.stop(1)

    uvloop.run(main())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up before each run [2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 1])
    parser.add_argument("--gateway", metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gateway:
        run_gateway(args.gateway)
        return 0
    inferd = next(peer for peer in PEERS if peer.key == "inferd")
    ensure_model()
    load = os.getloadavg()
    runs: dict[tuple[str, int], list[Result]] = {}
    with tempfile.TemporaryDirectory(prefix="gateway-grpc-") as tmp, ExitStack() as stack:
        workdir = Path(tmp) / "inferd"
        workdir.mkdir()
        prepared = inferd.prepare(workdir)
        spec = ServerSpec("inferd", inferd.label, "inferd", lambda _: prepared.launch)
        running = stack.enter_context(serving(spec, workdir))
        upstream = f"127.0.0.1:{prepared.grpc_port}"
        gateway = stack.enter_context(gateway_process(upstream, __file__, READY))
        ports = {"direct": prepared.grpc_port, "gateway": int(gateway)}
        haproxy = stack.enter_context(haproxy_process(f"127.0.0.1:{running.port}", upstream))
        if haproxy is not None and haproxy.grpc_port is not None:
            ports["haproxy"] = haproxy.grpc_port
        targets = {name: Served(inferd, running, port) for name, port in ports.items()}
        body, log = Path(tmp) / "request.bin", Path(tmp) / "h2load.log"
        body.write_bytes(framed(request_message()))
        expected = expected_answer()
        for round_ in range(1, args.rounds + 1):
            for concurrency in args.concurrency:
                for name, served in targets.items():
                    check(served, expected)
                    h2load(served, body, concurrency, args.warmup, None)
                    result = h2load(served, body, concurrency, args.duration, log)
                    if result.errors:
                        print(f"{name}: {result.errors} failed calls", file=sys.stderr)
                        return 2
                    runs.setdefault((name, concurrency), []).append(result)
                    print(
                        f"round {round_} c{concurrency:<3} {name:<8} {result.rps:8,.0f} req/s  "
                        f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms",
                        flush=True,
                    )
    text = report(args, runs, load)
    print("\n" + text, end="")
    path = ROOT / "bench" / "results" / f"gateway-grpc-{datetime.now(timezone.utc):%Y-%m-%d}.txt"
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")
    return 0 if "FAIL" not in text else 1


def report(
    args: argparse.Namespace, runs: dict[tuple[str, int], list[Result]], load: tuple[float, ...]
) -> str:
    lines = [
        f"# bench/gateway_grpc.py --duration {args.duration} --rounds {args.rounds}, "
        f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}",
        *machine_lines(load),
        "# V2 gRPC ModelInfer on examples/iris (1 worker) by h2load: direct to the service's gRPC port, "
        "through the embedded gateway's gRPC side, through HAProxy's gRPC frontend; medians of the rounds",
        f"{'concurrency':>11}  {'path':<8}  {'req/s':>8}  {'p50 ms':>7}  {'p99 ms':>7}  {'/ direct':>8}",
    ]
    for concurrency in args.concurrency:
        direct = runs["direct", concurrency]
        for name in ("direct", "gateway", "haproxy"):
            if (name, concurrency) not in runs:
                continue
            mine = runs[name, concurrency]
            rps = statistics.median(run.rps for run in mine)
            ratio = rps / statistics.median(run.rps for run in direct)
            lines.append(
                f"{concurrency:>11}  {name:<8}  {rps:>8,.0f}  "
                f"{statistics.median(run.p50_ms for run in mine):>7.2f}  "
                f"{statistics.median(run.p99_ms for run in mine):>7.2f}  {ratio:>7.2f}x"
            )
            if name != "direct":
                each = " ".join(f"{a.rps / b.rps:.2f}" for a, b in zip(mine, direct, strict=True))
                lines.append(f"{'':>13}round by round: {each}")
    for name, target in TARGETS.items():
        if (name, 16) in runs:
            ratio = statistics.median(run.rps for run in runs[name, 16]) / statistics.median(
                run.rps for run in runs["direct", 16]
            )
            verdict = "PASS" if ratio >= target else "FAIL"
            lines.append(f"target: c16 {name} / direct >= {target}: {ratio:.2f}x {verdict}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
