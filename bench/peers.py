"""What the peer benchmarks (inferd's route against the real server of a dialect) share: the servers,
a peer's readiness wait, one wrk run with the peak RSS, the load loop, the table and the results file.

Used by bench/seldon_iris.py and bench/deepaas_bench.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType

from loadgen import LUA, RESULT, ROOT
from v2_iris import (
    WRK_TIMEOUT,
    BenchError,
    PeakRss,
    git_revision,
    machine_description,
    process_tree,
    request,
    stop,
)

HOST = "127.0.0.1"
START_TIMEOUT_S = 120.0


@dataclass
class Run:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    peak_rss: int


@dataclass
class Server:
    name: str
    process: subprocess.Popen[str] | subprocess.Popen[bytes]
    port: int
    path: str  # what wrk loads: the path and the query string
    runs: dict[int, list[Run]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{self.path}"


# ------------------------------------------------------------------------------------------ servers


def wait_ready(server: Server, path: str, log: Path) -> Server:
    """``server`` once ``GET path`` answers 200; its log's end if it exits or is not ready in time."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            code = server.process.returncode
            raise BenchError(f"{server.name} exited with {code}:\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            if request(server.port, "GET", path)[0] == 200:
                return server
        time.sleep(0.2)
    raise BenchError(f"{server.name} not ready in {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-2000:]}")


def stop_strays() -> None:
    """Kill the process group of any child of ours that leads its own (a server caught mid-start)."""
    for pid, _ in process_tree(os.getpid())[1:]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: stop the servers as on Ctrl+C."""
    raise KeyboardInterrupt


# ---------------------------------------------------------------------------------------------- wrk


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up before each run [2]")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two servers [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    return parser.parse_args()


def json_body(body: str) -> dict[str, str]:
    """The environment bench/v2_iris.lua reads the JSON body it posts from."""
    return {"V2_IRIS_BODY": body}


def measure(
    server: Server, concurrency: int, seconds: int, wrk_env: Mapping[str, str], script: Path = LUA
) -> Run:
    """One wrk run of ``script`` (which reads its request from ``wrk_env`` and prints the result line
    bench/v2_iris.lua prints) and the server tree's peak RSS meanwhile."""
    threads = 1 if concurrency == 1 else 2
    command = [
        "wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", WRK_TIMEOUT,
        "-s", str(script), server.url,
    ]  # fmt: skip
    with PeakRss(server.process.pid) as rss:
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, **wrk_env}, check=False
        )
    match = RESULT.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise BenchError(f"wrk failed (exit {done.returncode}): {done.stdout}{done.stderr}")
    raw = json.loads(match.group(1))
    errors = sum(raw[key] for key in ("non_2xx", "connect_errors", "read_errors", "write_errors", "timeouts"))
    return Run(
        rps=raw["requests"] / (raw["duration_us"] / 1e6),
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        errors=errors,
        peak_rss=rss.peak_bytes,
    )


def load(
    args: argparse.Namespace, servers: dict[str, Server], wrk_env: Mapping[str, str], script: Path = LUA
) -> None:
    """For each concurrency, for each round: a warm-up and a measured run on each server in turn."""
    for concurrency in args.concurrency:
        for round_ in range(1, args.rounds + 1):
            for server in servers.values():
                measure(server, concurrency, args.warmup, wrk_env, script)
                run = measure(server, concurrency, args.duration, wrk_env, script)
                server.runs.setdefault(concurrency, []).append(run)
                print(
                    f"c{concurrency:<3} round {round_}  {server.name:<12}  {run.rps:8,.0f} req/s  "
                    f"p50 {run.p50_ms:7.2f} ms  p99 {run.p99_ms:7.2f} ms  errors {run.errors}",
                    flush=True,
                )


# ---------------------------------------------------------------------------------------- reporting


@dataclass(frozen=True)
class Cell:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    peak_rss_mib: float


def cell(server: Server, concurrency: int) -> Cell:
    runs = server.runs[concurrency]
    return Cell(
        rps=statistics.median(run.rps for run in runs),
        p50_ms=statistics.median(run.p50_ms for run in runs),
        p99_ms=statistics.median(run.p99_ms for run in runs),
        errors=sum(run.errors for run in runs),
        peak_rss_mib=max(run.peak_rss for run in runs) / 2**20,
    )


def header_line(*extra: tuple[str, int]) -> str:
    """The titles of a peer table, then ``extra`` (title, width) columns."""
    base = (
        f"{'concurrency':>11}  {'server':<12}  {'req/s':>8}  {'p50 ms':>7}  {'p99 ms':>7}  "
        f"{'peak RSS MiB':>12}  {'errors':>6}"
    )
    return _with_columns(base, extra)


def row_line(concurrency: int, name: str, one: Cell, *extra: tuple[str, int]) -> str:
    """One server's cell of a peer table, then ``extra`` (text, width) columns."""
    base = (
        f"{concurrency:>11}  {name:<12}  {one.rps:>8,.0f}  {one.p50_ms:>7.2f}  {one.p99_ms:>7.2f}  "
        f"{one.peak_rss_mib:>12.1f}  {one.errors:>6}"
    )
    return _with_columns(base, extra)


def _with_columns(base: str, extra: tuple[tuple[str, int], ...]) -> str:
    return (base + "".join(f"  {text:>{width}}" for text, width in extra)).rstrip()


@dataclass(frozen=True)
class Target:
    concurrency: int
    ratio: float
    lower_p99: bool  # inferd's p99 must also be lower than the peer's


def table(inferd: Server, peer: Server, target: Target) -> tuple[list[str], bool]:
    """The table's lines and whether the target is met."""
    ratio_title = f"inferd / {peer.name}"
    lines = [header_line((ratio_title, 20))]
    passed = None
    for concurrency in sorted(set(inferd.runs) & set(peer.runs)):
        ours, theirs = cell(inferd, concurrency), cell(peer, concurrency)
        ratio = ours.rps / theirs.rps if theirs.rps else float("inf")
        for name, one, shown in ((inferd.name, ours, f"{ratio:.2f}x"), (peer.name, theirs, "")):
            lines.append(row_line(concurrency, name, one, (shown, 20)))
        lines.extend(round_ratios(inferd.runs[concurrency], peer.runs[concurrency]))
        if concurrency == target.concurrency:
            passed = ratio >= target.ratio and not ours.errors + theirs.errors
            if target.lower_p99:
                passed = passed and ours.p99_ms < theirs.p99_ms
    verdict = {True: "PASS", False: "FAIL", None: "FAIL (not measured)"}[passed]
    p99 = " and a lower p99" if target.lower_p99 else ""
    lines.append(
        f"target: at concurrency {target.concurrency}, inferd >= {target.ratio:g}x {peer.name}'s req/s"
        f"{p99}, no errors: {verdict}"
    )
    return lines, passed is True


def round_ratios(ours: list[Run], theirs: list[Run]) -> list[str]:
    """inferd's req/s over the peer's in each round (run back to back, so a drift of the machine
    touches both alike), and their median: a line, when there are rounds to pair."""
    ratios = [one.rps / other.rps for one, other in zip(ours, theirs, strict=False) if other.rps]
    if len(ratios) < 2:
        return []
    each = " ".join(f"{ratio:.2f}" for ratio in ratios)
    return [f"  round by round: {each} (median {statistics.median(ratios):.2f}x)"]


def machine(peer: str) -> list[str]:
    """The machine, inferd's revision and ``peer`` (the other server, its version and configuration)."""
    return [f"# machine: {machine_description()}", f"# inferd {git_revision()}, {peer}"]


def report(script: str, name: str, peer: str, what: str, lines: list[str], args: argparse.Namespace) -> None:
    """Print the table under a header (the command, the machine, ``peer`` as for machine(), ``what`` was
    requested) and write it to bench/results/NAME-<date>.txt."""
    now = datetime.now(timezone.utc)
    header = [
        f"# bench/{script} --duration {args.duration} --rounds {args.rounds} --concurrency "
        f"{' '.join(map(str, args.concurrency))}, {now:%Y-%m-%dT%H:%MZ}",
        *machine(peer),
        f"# {what}, medians over the rounds; peak RSS: the server's process tree",
    ]
    text = "\n".join([*header, *lines]) + "\n"
    print("\n" + text, end="")
    path = ROOT / "bench" / "results" / f"{name}-{now:%Y-%m-%d}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")


@dataclass(frozen=True)
class PeerBench:
    """What one inferd-against-a-peer script is: its servers, target and how it reports."""

    description: str
    script: str
    results: str
    peer: str
    peer_description: str
    what: str
    target: Target
    #: Also signal the peer's whole process group (seldon-core's main process alone lingers).
    signal_groups: bool = False


def run_against(
    bench: PeerBench, start: Callable[[argparse.Namespace, Path, dict[str, Server]], None]
) -> int:
    """The script's main: start both servers with ``start``, load them, print and write the table.
    Exit 0 on PASS, 1 on FAIL, 2 when the benchmark could not run, 130 when interrupted."""
    args = arguments(bench.description)
    if shutil.which("wrk") is None:
        print("wrk is missing: sudo apt-get update && sudo apt-get install -y wrk", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers on SIGTERM as on Ctrl+C
    servers: dict[str, Server] = {}
    status = 0
    with tempfile.TemporaryDirectory(prefix=f"{bench.results}-bench-") as tmp:
        try:
            start(args, Path(tmp), servers)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
        except KeyboardInterrupt:
            print("\ninterrupted: stopping the servers; partial results follow", file=sys.stderr)
            status = 130
        finally:
            for server in servers.values():
                print(f"{server.name}: {stop(server.process, bench.signal_groups)}")
            stop_strays()
    if {"inferd", bench.peer} <= servers.keys() and all(server.runs for server in servers.values()):
        lines, passed = table(servers["inferd"], servers[bench.peer], bench.target)
        report(bench.script, bench.results, bench.peer_description, bench.what, lines, args)
        status = status or (0 if passed else 1)
    return status
