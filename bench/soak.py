"""Soak (issue 9): mixed valid and invalid traffic at loopback for a bounded time, while the server's
resident memory and open file descriptors are sampled; every request is answered exactly once.

Starts ``inferd serve examples/iris --workers 2`` (``--isolate`` to soak isolated workers), then
``--concurrency`` clients send, for ``--duration`` seconds, a mix of valid V2 requests, bad JSON,
wrong shapes, unknown models and bodies over the server's limit (``INFERD_MAX_BODY_SIZE`` is set to
64 KiB for the run), each with a unique ``X-Request-ID`` (and V2 ``id`` on valid ones). Every answer
must echo its id, carry the status its kind expects, and no id may be answered twice. Every
``--interval`` seconds the RSS and open file descriptors of the server's whole process tree are
sampled. Verdicts: RSS growth after the warm-up under 5%, file descriptors flat, 0 lost, 0
duplicated, 0 unexpected statuses.

    .venv/bin/python bench/soak.py                    # 10 minutes
    .venv/bin/python bench/soak.py --duration 60 --out bench/results/soak.txt
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.loadgen import ROOT, start_inferd
from inferd.core.processes import MIB, descendants, open_fds, rss_bytes

MAX_BODY = 64 * 1024
ROW = [5.1, 3.5, 1.4, 0.2]


def valid(rid: str) -> bytes:
    rows = random.randint(1, 8)
    tensor = {"name": "input-0", "shape": [rows, 4], "datatype": "FP32", "data": [ROW] * rows}
    return orjson.dumps({"id": rid, "inputs": [tensor]})


#: kind → (share of the traffic, path, body maker, expected status)
KINDS = {
    "valid": (0.6, "/v2/models/iris/infer", valid, 200),
    "bad_json": (0.1, "/v2/models/iris/infer", lambda rid: b'{"inputs": [', 400),
    "wrong_shape": (
        0.1,
        "/v2/models/iris/infer",
        lambda rid: orjson.dumps(
            {"inputs": [{"name": "input-0", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]}
        ),
        400,
    ),
    "unknown_model": (0.1, "/v2/models/nope/infer", valid, 404),
    "oversized": (0.1, "/v2/models/iris/infer", lambda rid: b" " * (MAX_BODY + 1024), 413),
}


@dataclass
class Tally:
    sent: int = 0
    answered: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    unexpected: Counter[tuple[str, int]] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def duplicated(self) -> int:
        return sum(count - 1 for count in self.answered.values() if count > 1)


@dataclass
class Sample:
    seconds: float
    requests: int
    rss: int
    fds: int
    processes: int


def sample(pid: int, started: float, tally: Tally) -> Sample:
    tree = [pid, *descendants(pid)]
    rss = sum(rss_bytes(p) or 0 for p in tree)
    fds = sum(open_fds(p) or 0 for p in tree)
    return Sample(time.monotonic() - started, tally.sent, rss, fds, len(tree))


async def client(http: httpx.AsyncClient, ids: itertools.count[int], tally: Tally, deadline: float) -> None:
    kinds, weights = list(KINDS), [spec[0] for spec in KINDS.values()]
    while time.monotonic() < deadline:
        kind = random.choices(kinds, weights)[0]
        _, path, make, expected = KINDS[kind]
        rid = f"soak-{next(ids)}"
        tally.sent += 1
        tally.by_kind[kind] += 1
        try:
            response = await http.post(path, content=make(rid), headers={"X-Request-ID": rid})
        except httpx.HTTPError as exc:
            tally.lost.append(f"{rid} ({kind}): {type(exc).__name__} {exc}")
            continue
        echoed = response.headers.get("x-request-id")
        tally.answered[echoed or f"<none for {rid}>"] += 1
        if echoed != rid or (kind == "valid" and response.json().get("id") != rid):
            tally.mismatched.append(f"{rid} ({kind}) answered as {echoed}")
        if response.status_code != expected:
            tally.unexpected[kind, response.status_code] += 1


async def soak(url: str, pid: int, args: argparse.Namespace) -> tuple[Tally, list[Sample]]:
    tally, samples, ids = Tally(), [], itertools.count(1)
    started = time.monotonic()
    deadline = started + args.duration
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
        clients = [asyncio.create_task(client(http, ids, tally, deadline)) for _ in range(args.concurrency)]
        samples.append(sample(pid, started, tally))
        while not all(task.done() for task in clients):
            await asyncio.wait(clients, timeout=args.interval)
            samples.append(sample(pid, started, tally))
            print(row(samples[-1], samples[-2]), flush=True)
        for task in clients:
            task.result()
    return tally, samples


def row(now: Sample, before: Sample) -> str:
    rate = (now.requests - before.requests) / max(now.seconds - before.seconds, 1e-9)
    memory = now.rss / MIB
    return f"{now.seconds:7.0f} {now.requests:10d} {rate:8.0f} {memory:9.1f} {now.fds:5d} {now.processes:5d}"


HEADER = f"{'t (s)':>7} {'requests':>10} {'req/s':>8} {'RSS (MiB)':>9} {'fds':>5} {'procs':>5}"


def verdicts(tally: Tally, samples: list[Sample], warmup: float, concurrency: int) -> list[tuple[str, bool]]:
    warm = next((s for s in samples if s.seconds >= warmup), samples[-1])
    after = [s for s in samples if s.seconds >= warm.seconds]
    growth = (max(s.rss for s in after) - warm.rss) / warm.rss * 100
    fd_spread = max(s.fds for s in after) - min(s.fds for s in after)
    answered = sum(tally.answered.values())
    return [
        (f"RSS growth after the warm-up ({warm.seconds:.0f} s): {growth:+.2f}% (under 5%)", growth < 5),
        (
            f"file descriptors after the warm-up: {min(s.fds for s in after)}-{max(s.fds for s in after)} "
            f"(flat: spread within the {concurrency} client connections)",
            fd_spread <= concurrency,
        ),
        (f"requests sent {tally.sent}, answered {answered}, lost {len(tally.lost)}", not tally.lost),
        (f"duplicated answers: {tally.duplicated}", tally.duplicated == 0),
        (f"answers not echoing their request id: {len(tally.mismatched)}", not tally.mismatched),
        (
            f"unexpected statuses: {sum(tally.unexpected.values())} {dict(tally.unexpected) or ''}",
            not tally.unexpected,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of traffic (default 600)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument("--warmup", type=float, help="seconds before the RSS baseline (default: a sixth)")
    parser.add_argument("--concurrency", type=int, default=8, help="clients sending at once (default 8)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--isolate", action="store_true", help="serve with --isolate")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    warmup = args.warmup if args.warmup is not None else args.duration / 6
    serve_args = [str(ROOT / "examples" / "iris"), "--workers", str(args.workers)]
    if args.isolate:
        serve_args.append("--isolate")
    # This checkout's inferd (python -m from its root), not whichever one is installed.
    env = {**os.environ, "INFERD_MAX_BODY_SIZE": str(MAX_BODY)}
    process, url = start_inferd(*serve_args, cwd=ROOT, env=env, inferd=(sys.executable, "-m", "inferd"))
    try:
        print(f"soaking inferd serve {' '.join(serve_args[1:])} at {url} for {args.duration:.0f} s")
        print(HEADER, flush=True)
        tally, samples = asyncio.run(soak(url, process.pid, args))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    checks = verdicts(tally, samples, warmup, args.concurrency)
    head = [
        f"inferd soak: examples/iris, {' '.join(serve_args[1:])}, {args.duration:.0f} s, "
        f"concurrency {args.concurrency}, samples every {args.interval:.0f} s",
        f"traffic: {dict(tally.by_kind)}",
        HEADER,
        *(row(now, before) for before, now in itertools.pairwise(samples)),
    ]
    summary = [
        "",
        *(f"{'PASS' if ok else 'FAIL'}  {text}" for text, ok in checks),
        *(f"lost: {line}" for line in tally.lost[:20]),
        *(f"mismatched: {line}" for line in tally.mismatched[:20]),
    ]
    print("\n".join(summary))
    if args.out is not None:
        args.out.write_text("\n".join(head + summary) + "\n")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
