"""Where a serving process's memory goes, by what it imports (issue 26, memory): the RSS each module's
import added, summed per top-level package, for ``inferd serve examples/iris --no-grpc`` beside the
floor (bench/floor_app.py), so the packages that make inferd's peak RSS exceed the floor's show with
their size; bench/memory.py gives the peaks themselves.

Each server runs under this file (``--probe OUT SCRIPT ARGS``), which wraps the import system's
``_find_and_load`` and notes VmRSS before and after each module's first import: the module's own
share is its growth minus what the imports it made added (so a model class built while a module
runs counts for that module). It is answered the iris request first, and its RSS split into
anonymous and file-backed pages (shared libraries' code) read then; the record is written when
SIGTERM stops it. Page-granular and sensitive to where the allocator's arenas happen to grow: read
tens of KiB per module as noise, the package sums as the figures. A shared library that two
extension modules link goes to whichever is imported first (OpenSSL's libcrypto: ``_hashlib`` in
inferd, ``_ssl`` in the floor), so compare such rows summed.

    .venv/bin/python bench/import_rss.py [--top 30]
"""

from __future__ import annotations

import argparse
import atexit
import collections
import dataclasses
import importlib._bootstrap as bootstrap
import json
import os
import re
import runpy
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
#: The process's own share of each module it imported, in bytes.
own: dict[str, int] = {}


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def _probed(find_and_load: Callable[..., Any]) -> Callable[..., Any]:
    """``_find_and_load`` noting each new module's share of RSS (its imports' shares taken out)."""
    children = [0]

    def wrapper(name: str, import_: Callable[..., Any]) -> Any:
        if name in sys.modules:
            return find_and_load(name, import_)
        children.append(0)
        before = _rss()
        try:
            return find_and_load(name, import_)
        finally:
            grew = _rss() - before
            own[name] = grew - children.pop()
            children[-1] += grew

    return wrapper


def probe(out: str, script: str) -> None:
    """Run the console script ``script`` (with the arguments after it) with imports measured."""
    bootstrap._find_and_load = _probed(bootstrap._find_and_load)  # type: ignore[attr-defined]
    atexit.register(lambda: Path(out).write_text(json.dumps(own)))
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.argv = sys.argv[sys.argv.index(script) :]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")


def package(module: str) -> str:
    """Where a module's share is added up: its top-level package, or inferd's subpackage."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "inferd" and len(parts) > 1 else parts[0]


def rss_split(pid: int) -> tuple[float, float]:
    """(anonymous, file-backed) resident MiB of ``pid``."""
    kib = dict(re.findall(r"^(RssAnon|RssFile):\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M))
    return int(kib["RssAnon"]) / 1024, int(kib["RssFile"]) / 1024


@dataclasses.dataclass
class Found:
    shares: collections.Counter[str]
    modules: set[str]
    anon_mib: float
    file_mib: float


def measure(spec: Any, expected: Any) -> Found:
    from v2_iris import check_answer, serving

    with tempfile.TemporaryDirectory(prefix=f"import-rss-{spec.key}-") as tmp:
        record = Path(tmp) / "imports.json"

        def prepare(workdir: Path) -> Any:
            launch = spec.prepare(workdir)
            command = [sys.executable, __file__, "--probe", str(record), *launch.command]
            return dataclasses.replace(launch, command=command)

        with serving(dataclasses.replace(spec, prepare=prepare), Path(tmp)) as running:
            check_answer(running, expected)
            anon, file = rss_split(running.process.pid)
        shares: dict[str, int] = json.loads(record.read_text())
    by_package: collections.Counter[str] = collections.Counter()
    for module, share in shares.items():
        by_package[package(module)] += share
    return Found(by_package, set(shares), anon, file)


def report(ours: Found, floor: Found, top: int) -> str:
    mib = 2**20
    lines = [
        "# bench/import_rss.py: RSS added by each package's imports (module shares summed), MiB",
        f"# RSS once answering: floor anon {floor.anon_mib:.1f} + file {floor.file_mib:.1f}; "
        f"inferd --no-grpc anon {ours.anon_mib:.1f} + file {ours.file_mib:.1f}",
        f"# imports measured: floor {sum(floor.shares.values()) / mib:.1f}, "
        f"inferd {sum(ours.shares.values()) / mib:.1f}",
        "",
        f"{'package':<36} {'inferd':>8} {'floor':>8} {'diff':>8}",
    ]
    names = set(ours.shares) | set(floor.shares)
    rows = sorted(names, key=lambda name: -abs(ours.shares[name] - floor.shares[name]))
    for name in rows[:top]:
        mine, theirs = ours.shares[name] / mib, floor.shares[name] / mib
        lines.append(f"{name:<36} {mine:>8.2f} {theirs:>8.2f} {mine - theirs:>+8.2f}")
    only = sorted({package(module) for module in ours.modules - floor.modules})
    lines += ["", "packages of the modules only inferd loads: " + ", ".join(only)]
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--top", type=int, default=30, help="packages listed, largest difference first [30]")
    args = parser.parse_args()
    from memory import SERVERS
    from v2_iris import ensure_model, expected_answer, from_bytecode, write_dated

    from_bytecode()
    ensure_model()
    expected = expected_answer()
    found = {spec.key: measure(spec, expected) for spec in SERVERS if spec.key in ("floor", "inferd-no-grpc")}
    return write_dated("import-rss", report(found["inferd-no-grpc"], found["floor"], args.top))


if __name__ == "__main__":
    sys.exit(main())
