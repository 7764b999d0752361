"""Memory (issue 26): the peak RSS of one inferd worker serving iris, as a ratio of the floor's.

Three servers on the same fitted model (``examples/iris/model.joblib``), started in turn on free
loopback ports: the floor (bench/floor_app.py, a bare Starlette app on uvicorn that never imports
inferd: checked here first), ``inferd serve examples/iris --no-grpc`` and the same with gRPC on. Each
must first answer the V2 iris request with the model's own answer; then wrk loads it (``--warmup``
seconds at each ``--concurrency``) while its process tree's summed RSS is sampled from the moment it
is ready. Each round runs the three back to back, so a ratio compares servers of the same minutes;
the report gives each server's RSS when ready and its peak, medians over the rounds, the median of
the rounds' ratios to the floor and the targets (``--no-grpc`` at most 1.08x, with gRPC at most
1.15x). Written to bench/results/memory-<date>.txt. Not part of CI; see bench/README.md.

    .venv/bin/python bench/memory.py [--rounds 3] [--warmup 5] [--concurrency 1 16 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from v2_iris import (
    BENCH,
    VENV_BIN,
    BenchError,
    Expected,
    PeakRss,
    ServerSpec,
    check_answer,
    ensure_model,
    expected_answer,
    floor_launch,
    from_bytecode,
    inferd_launch,
    machine_lines,
    process_tree,
    require_wrk,
    rss_bytes,
    run_wrk,
    serving,
    write_dated,
)

#: Peak RSS over the floor's, at most (issue 26).
TARGETS = {"inferd-no-grpc": 1.08, "inferd-grpc": 1.15}


SERVERS = (
    ServerSpec("floor", "floor (Starlette+uvicorn, no inferd)", "floor", floor_launch),
    ServerSpec(
        "inferd-no-grpc", "inferd 1 worker --no-grpc", "inferd", inferd_launch(1, options=["--no-grpc"])
    ),
    ServerSpec("inferd-grpc", "inferd 1 worker, gRPC on", "inferd", inferd_launch(1)),
)


@dataclass
class Measured:
    ready_mib: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)


def floor_imports_inferd() -> bool:
    """Whether importing bench/floor_app.py (as uvicorn does) loads any inferd module."""
    probe = "import sys, floor_app; print(any(m.split('.')[0] == 'inferd' for m in sys.modules))"
    done = subprocess.run(
        [str(VENV_BIN / "python"), "-c", probe], cwd=BENCH, capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True"


def measure(spec: ServerSpec, args: argparse.Namespace, expected: Expected, into: Measured) -> None:
    """Start ``spec``, check its answer, load it, and note its RSS when ready and its peak."""
    with tempfile.TemporaryDirectory(prefix=f"memory-{spec.key}-") as tmp:
        with serving(spec, Path(tmp)) as running:
            ready = sum(rss_bytes(pid) for pid, _ in process_tree(running.process.pid))
            with PeakRss(running.process.pid) as rss:
                check_answer(running, expected)
                for concurrency in args.concurrency:
                    result = run_wrk(running, concurrency, args.warmup)
                    if result.errors:
                        raise BenchError(f"{result.errors} errors under load at c{concurrency}")
                time.sleep(0.3)
                rss.sample()
    into.ready_mib.append(ready / 2**20)
    into.peak_mib.append(rss.peak_bytes / 2**20)
    print(f"  {spec.label}: ready {ready / 2**20:.1f} MiB, peak {rss.peak_bytes / 2**20:.1f} MiB", flush=True)


def report(measured: dict[str, Measured], args: argparse.Namespace, load: tuple[float, float, float]) -> str:
    floor = measured["floor"]
    lines = [
        f"# bench/memory.py --rounds {args.rounds} --warmup {args.warmup} --concurrency "
        f"{' '.join(map(str, args.concurrency))}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}",
        *machine_lines(load),
        "# RSS: summed over the server's process tree; peak: sampled every 0.25 s from ready through the",
        "# load (wrk at each concurrency); medians over the rounds; ratio: the median of each round's",
        "# peak over the floor's peak of the same round",
        "",
        f"{'server':<38} {'ready MiB':>10} {'peak MiB':>10} {'(min-max)':>15} {'peak / floor':>13}",
    ]
    for spec in SERVERS:
        one = measured[spec.key]
        ratios = [ours / theirs for ours, theirs in zip(one.peak_mib, floor.peak_mib, strict=True)]
        spread = f"({min(one.peak_mib):.1f}-{max(one.peak_mib):.1f})"
        lines.append(
            f"{spec.label:<38} {statistics.median(one.ready_mib):>10.1f} "
            f"{statistics.median(one.peak_mib):>10.1f} {spread:>15} {statistics.median(ratios):>12.3f}x"
        )
    lines.append("")
    for key, limit in TARGETS.items():
        ratios = [ours / theirs for ours, theirs in zip(measured[key].peak_mib, floor.peak_mib, strict=True)]
        ratio = statistics.median(ratios)
        verdict = "PASS" if ratio <= limit else "FAIL"
        rounds = ", ".join(f"{value:.3f}" for value in ratios)
        lines.append(f"{verdict} {key} peak RSS <= {limit:.2f}x the floor's: {ratio:.3f}x (rounds: {rounds})")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three servers [3]")
    parser.add_argument("--warmup", type=int, default=5, help="seconds of wrk load per concurrency [5]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    from_bytecode()
    if (missing := require_wrk()) is not None:
        print(missing, file=sys.stderr)
        return 2
    ensure_model()
    if floor_imports_inferd():
        print("bench/floor_app.py imports inferd: the floor would carry inferd's imports", file=sys.stderr)
        return 2
    load = os.getloadavg()
    measured, expected = {spec.key: Measured() for spec in SERVERS}, expected_answer()
    for round_ in range(1, args.rounds + 1):
        print(f"round {round_}/{args.rounds}", flush=True)
        for spec in SERVERS:
            measure(spec, args, expected, measured[spec.key])
    text = report(measured, args, load)
    return write_dated("memory", text)


if __name__ == "__main__":
    sys.exit(main())
