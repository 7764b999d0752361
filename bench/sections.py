"""`make bench`: every section of the performance issues, one after another, then one summary.

Each section is its own script, run as a user would run it (its own table, its own results file
under bench/results/); this script only runs them in turn and gathers each one's target lines
(``PASS``/``FAIL``) under its section's name, with the machine and its load, into
bench/results/sections-<date>-<time>.txt. A section that fails to run is reported as such and the
others still run. The sections (``--only`` takes their names):

- ``json``: all.py, inferd and every peer on small iris V2 JSON requests, plus the floor (wrk);
- ``grpc``: grpc_load.py, V2 gRPC under h2load against MLServer and KServe;
- ``tensors``: payload_sweep.py, FP32 tensors of 4 KiB to 16 MiB over JSON, binary REST and gRPC;
- ``memory``: memory.py, peak RSS against the bare floor app;
- ``cold-start``: cold_start.py, time to the first 200 against every peer.

    .venv/bin/python bench/sections.py [--only json,grpc] [--dry-run]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


@dataclass(frozen=True)
class Section:
    name: str
    script: str
    arguments: tuple[str, ...] = ()


SECTIONS = (
    Section("json", "all.py", ("--rounds", "3")),
    Section("grpc", "grpc_load.py"),
    Section("tensors", "payload_sweep.py"),
    Section("memory", "memory.py", ("--rounds", "3")),
    Section("cold-start", "cold_start.py"),
)


def target_lines(text: str) -> list[str]:
    """The lines of a section's output that state a target and whether it was met."""
    return [line.strip() for line in text.splitlines() if "PASS" in line or "FAIL" in line]


def run(section: Section) -> tuple[int, list[str], float]:
    """Run one section's script with this Python, its output passed through as it comes; its exit
    code, its target lines and its seconds."""
    started = time.monotonic()
    command = [sys.executable, str(BENCH / section.script), *section.arguments]
    with subprocess.Popen(command, cwd=BENCH.parent, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            sys.stdout.write(line)
            seen.append(line)
    return process.returncode, target_lines("".join(seen)), time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="sections to run, comma-separated (default: all)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    names = {name for name in args.only.split(",") if name}
    unknown = names - {section.name for section in SECTIONS}
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    chosen = [section for section in SECTIONS if not names or section.name in names]
    if args.dry_run:
        for section in chosen:
            print(section.name, " ".join([sys.executable, section.script, *section.arguments]))
        return 0
    load = os.getloadavg()
    summary = [
        f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} CPUs,"
        f" Python {platform.python_version()}",
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    ]
    failed = 0
    for section in chosen:
        code, lines, seconds = run(section)
        failed += code != 0
        status = "ran" if code == 0 else f"exited {code}"
        summary += ["", f"## {section.name} ({section.script}, {status}, {seconds:.0f} s)", *lines]
    text = "\n".join(summary) + "\n"
    print("\n" + text)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    (RESULTS / f"sections-{stamp}.txt").write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
