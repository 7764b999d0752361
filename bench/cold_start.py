"""Cold start (issue 26): from launching a server process to its first 200 on the iris model, and the
peak RSS of its process tree meanwhile, for inferd and its peers on the same fitted model
(``examples/iris/model.joblib``); and how long ``inferd --help`` takes.

The floor (bench/floor_app.py: the same model behind a bare Starlette app on uvicorn) shows the least
a Python server of this model takes. Each peer is launched as bench/all.py launches it (its own venv
under bench/.envs, created on first use; one that cannot be installed or started is skipped with the
reason), on free loopback ports. From the moment a server is launched it is asked its protocol's
iris request every 5 ms (V2 infer, Seldon's predictions, DEEPaaS's predict) until one answers 200
with the model's own answer: the time to that answer is its cold start. Meanwhile a thread follows
the process tree every 50 ms and keeps each process's own peak RSS (``VmHWM``); their sum is the
tree's peak during start. Every round starts each server once, in turn, after one unmeasured start
of each (``--warmup-rounds``: the same page cache for all); the report gives medians over the
rounds, each server's time over inferd's and the targets (inferd at most half the time of the
fastest peer; ``inferd --help``, median of ``--help-runs`` runs per round, under 0.3 s). Written to
bench/results/cold-start-<date>.txt. Not part of CI; see bench/README.md.

    .venv/bin/python bench/cold_start.py [--rounds 3] [--only inferd,floor,kserve,...] [--phases 3]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import all as suite
from v2_iris import (
    EXAMPLE,
    HOST,
    ROOT,
    V2,
    BenchError,
    Expected,
    Launch,
    Protocol,
    ensure_model,
    expected_answer,
    floor_launch,
    free_port,
    from_bytecode,
    machine_lines,
    mlserver_launch,
    stop,
    venv_tool,
    write_dated,
)

POLL_S = 0.005
SAMPLE_S = 0.05
START_TIMEOUT_S = 120.0
HELP_LIMIT_S = 0.3
FASTEST_PEER_FACTOR = 0.5


def inferd_launch(*options: str) -> Callable[[Path], Launch]:
    """``inferd serve examples/iris`` on free ports (named: the poll cannot wait for a ready line)."""

    def prepare(workdir: Path) -> Launch:
        port = free_port()
        command = [
            venv_tool("inferd"), "serve", str(EXAMPLE), "--port", str(port), "--grpc-port", str(free_port()),
            *options,
        ]  # fmt: skip
        return Launch(command, ROOT, port)

    return prepare


@dataclass(frozen=True)
class Starter:
    key: str
    label: str
    prepare: Callable[[Path], Launch]
    protocol: Protocol = V2
    peer: bool = True
    returns_probabilities: bool = True


STARTERS = (
    Starter("inferd", "inferd serve examples/iris", inferd_launch(), peer=False),
    Starter("inferd-no-grpc", "inferd serve examples/iris --no-grpc", inferd_launch("--no-grpc"), peer=False),
    Starter("floor", "floor (Starlette+uvicorn, no inferd)", floor_launch, peer=False),
    Starter("mlserver", "MLServer 1.7", mlserver_launch(0), returns_probabilities=False),
    Starter("kserve", "KServe 0.21", suite.kserve_launch),
    Starter("bentoml", "BentoML 1.4", suite.bentoml_launch),
    Starter("seldon-core", "seldon-core-microservice 1.18", suite.seldon_core_launch, suite.SELDON),
    Starter("deepaas-run", "deepaas-run 2.6", suite.deepaas_run_launch, suite.DEEPAAS),
)


@dataclass
class Outcome:
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    skipped: str | None = None


class StartPeak:
    """Follows a process tree (through /proc/PID/task/TID/children, cheap enough to run every 50 ms
    beside a starting server) and keeps each process's VmHWM, its own peak RSS."""

    def __init__(self, pid: int) -> None:
        self.root, self.peaks = pid, {pid: 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> StartPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    @property
    def mib(self) -> float:
        return sum(self.peaks.values()) / 1024

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        todo = [self.root]
        while todo:
            pid = todo.pop()
            self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm_kib(pid))
            todo += _children(pid)


def _hwm_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                found += [
                    int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                ]
    return found


def first_answer(process: subprocess.Popen[bytes], port: int, protocol: Protocol) -> bytes:
    """The first 200 answer to ``protocol``'s request, asked every POLL_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    headers = {"Content-Type": "application/json"}
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"exited with code {process.returncode} before answering")
        connection = http.client.HTTPConnection(HOST, port, timeout=START_TIMEOUT_S)
        try:
            connection.request("POST", protocol.path, body=protocol.body, headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.status == 200:
                return body
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()
        time.sleep(POLL_S)
    raise BenchError(f"no 200 in {START_TIMEOUT_S:.0f} s")


def cold_start(starter: Starter, expected: Expected, probe: Path | None = None) -> tuple[float, float]:
    """Seconds from launch to the first 200 with the model's answer, and the tree's peak MiB meanwhile.
    ``probe``: run the server under bench/start_probe.py, which writes its timeline there (as seconds
    from this launch) once the server is stopped."""
    with tempfile.TemporaryDirectory(prefix=f"cold-{starter.key}-") as tmp:
        launch = starter.prepare(Path(tmp))
        command = launch.command if probe is None else probed(launch.command, Path(tmp) / "probe.json")
        log = Path(tmp) / "server.log"
        with log.open("wb") as out:
            began = time.monotonic()  # the clock start_probe.py stamps its marks with
            process = subprocess.Popen(
                command, cwd=launch.cwd, env=launch.env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            with StartPeak(process.pid) as peak:
                try:
                    body = first_answer(process, launch.port or 0, starter.protocol)
                except BenchError as exc:
                    raise BenchError(f"{exc}; the end of its log:\n{log.read_text()[-1500:]}") from None
                seconds = time.monotonic() - began
            starter.protocol.check(body, expected, starter.returns_probabilities)
        finally:
            ended = stop(process, launch.stop_group)
        if probe is not None:
            try:
                found = timeline(Path(tmp) / "probe.json", began)
            except BenchError as exc:
                raise BenchError(f"{exc} ({ended}); the end of its log:\n{log.read_text()[-1500:]}") from None
            probe.write_text(json.dumps({"ready": seconds, **found}))
        return seconds, peak.mib


def probed(command: list[str], out: Path) -> list[str]:
    """``command`` (a console script) run by its own interpreter under bench/start_probe.py."""
    interpreter = Path(command[0]).read_text().splitlines()[0].removeprefix("#!").strip()
    return [interpreter, str(Path(__file__).with_name("start_probe.py")), str(out), *command]


def timeline(path: Path, began: float) -> dict[str, float]:
    """start_probe.py's record as the milestones of PHASES, in seconds from ``began`` (the launch)."""
    if not path.exists():
        raise BenchError("the probed server wrote no timeline (did it exit on SIGTERM?)")
    record = json.loads(path.read_text())
    found = {
        "gc pauses (total)": record["gc"]["seconds"],
        "gc pauses (full collections)": record["gc"]["full"],
    }
    for label, kind, key in PHASES:
        if key == "*":
            found[label] = max(record["last"].values()) - began
        elif key in record[kind]:
            found[label] = record[kind][key] - began
    return found


#: The milestones of a start (bench/start_probe.py's record): (label, which record, key).
PHASES = (
    ("interpreter up (probe runs)", "marks", "probe started"),
    ("first import of inferd", "first", "inferd"),
    ("first import of numpy", "first", "numpy"),
    ("first import of pydantic", "first", "pydantic"),
    ("first import of starlette", "first", "starlette"),
    ("first import of uvicorn", "first", "uvicorn"),
    ("first import of sklearn", "first", "sklearn"),
    ("last import of sklearn", "last", "sklearn"),
    ("model file opened (unpickling)", "marks", "model file opened"),
    ("first socket bound", "marks", "first socket bound"),
    ("last import of any module", "last", "*"),
)
PHASED = ("inferd", "inferd-no-grpc", "floor")


def phase_table(phases: dict[str, list[dict[str, float]]], unprobed: dict[str, Outcome]) -> list[str]:
    """The medians of the probed starts' milestones, one column per server."""
    keys = [key for key in PHASED if phases.get(key)]
    if not keys:
        return []
    labels = {starter.key: starter.key for starter in STARTERS}
    lines = [
        "",
        "# start-up timeline (bench/start_probe.py: an audit hook in the server's process), seconds from",
        "# launch, medians of the probed starts; the probe's own cost shows as probed ready - unprobed ready",
        f"{'milestone':<38}" + "".join(f" {labels[key]:>15}" for key in keys),
    ]
    rows = [label for label, _, _ in PHASES] + [
        "first 200 (probed)",
        "gc pauses (total)",
        "gc pauses (full collections)",
    ]
    for label in rows:
        cells = []
        for key in keys:
            name = "ready" if label == "first 200 (probed)" else label
            values = [one[name] for one in phases[key] if name in one]
            cells.append(f"{statistics.median(values):>15.3f}" if values else f"{'-':>15}")
        lines.append(f"{label:<38}" + "".join(f" {cell}" for cell in cells))
    ready = [
        statistics.median(unprobed[key].seconds) if unprobed.get(key) and unprobed[key].seconds else None
        for key in keys
    ]
    lines.append(
        f"{'first 200 (unprobed, above)':<38}"
        + "".join(f" {r:>15.3f}" if r else f" {'-':>15}" for r in ready)
    )
    return lines


def help_seconds(runs: int) -> float:
    """The median wall time of ``inferd --help``."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([venv_tool("inferd"), "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def report(
    outcomes: dict[str, Outcome],
    helps: list[float],
    args: argparse.Namespace,
    load: tuple[float, ...],
    phases: dict[str, list[dict[str, float]]],
) -> str:
    lines = [
        f"# bench/cold_start.py --rounds {args.rounds} --warmup-rounds {args.warmup_rounds}, "
        f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}",
        *machine_lines((load[0], load[1], load[2])),
        f"# ready: launch to the first 200 with the model's answer (asked every {POLL_S * 1000:.0f} ms);",
        "# peak: the sum of each process's own peak RSS (VmHWM) over the tree until then; medians of rounds",
        "",
        f"{'server':<38} {'ready s':>8} {'(min-max)':>13} {'peak MiB':>9} {'ready / inferd':>15}",
    ]
    inferd = outcomes.get("inferd")
    ours = statistics.median(inferd.seconds) if inferd is not None and inferd.seconds else None
    for starter in STARTERS:
        one = outcomes.get(starter.key)
        if one is None:
            continue
        if not one.seconds:
            lines.append(f"{starter.label:<38} skipped: {one.skipped}")
            continue
        median = statistics.median(one.seconds)
        ratio = f"{median / ours:.2f}x" if ours else "-"
        spread, peak = f"({min(one.seconds):.2f}-{max(one.seconds):.2f})", statistics.median(one.peak_mib)
        lines.append(f"{starter.label:<38} {median:>8.3f} {spread:>13} {peak:>9.1f} {ratio:>15}")
    lines.append("")
    measured = [
        (statistics.median(one.seconds), starter.label)
        for starter in STARTERS
        if starter.peer and (one := outcomes.get(starter.key)) is not None and one.seconds
    ]
    if ours is not None and measured:
        fastest, label = min(measured)
        verdict = "PASS" if ours <= FASTEST_PEER_FACTOR * fastest else "FAIL"
        lines.append(
            f"{verdict} inferd ready in <= {FASTEST_PEER_FACTOR:.1f}x the fastest peer's time ({label}): "
            f"{ours:.3f} s / {fastest:.3f} s = {ours / fastest:.2f}x"
        )
    floor = outcomes.get("floor")
    if floor is not None and floor.seconds:
        bare = statistics.median(floor.seconds)
        for key in ("inferd", "inferd-no-grpc"):
            one = outcomes.get(key)
            if one is not None and one.seconds:
                ready = statistics.median(one.seconds)
                lines.append(
                    f"FLOOR {key} ready / floor ready: {ready:.3f} s / {bare:.3f} s = {ready / bare:.2f}x "
                    f"(inferd's own overhead {ready - bare:+.3f} s)"
                )
    if helps:
        median = statistics.median(helps)
        verdict = "PASS" if median < HELP_LIMIT_S else "FAIL"
        each = ", ".join(f"{value:.3f}" for value in helps)
        lines.append(
            f"{verdict} inferd --help under {HELP_LIMIT_S} s: {median:.3f} s (rounds' medians: {each})"
        )
    lines += phase_table(phases, outcomes)
    return "\n".join(lines) + "\n"


def probed_starts(chosen: list[Starter], expected: Expected, runs: int) -> dict[str, list[dict[str, float]]]:
    """``runs`` starts of each of PHASED under bench/start_probe.py, each start's timeline."""
    found: dict[str, list[dict[str, float]]] = {}
    for run in range(1, runs + 1):
        print(f"probed start {run}/{runs}", flush=True)
        for starter in chosen:
            if starter.key not in PHASED:
                continue
            with tempfile.TemporaryDirectory(prefix="cold-probe-") as tmp:
                out = Path(tmp) / "timeline.json"
                cold_start(starter, expected, out)
                found.setdefault(starter.key, []).append(json.loads(out.read_text()))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="measured starts of each server [3]")
    parser.add_argument("--warmup-rounds", type=int, default=1, help="unmeasured starts first [1]")
    parser.add_argument("--help-runs", type=int, default=5, help="runs of inferd --help per round [5]")
    parser.add_argument("--only", default=None, help="comma-separated server keys (default: all)")
    parser.add_argument(
        "--phases", type=int, default=0,
        help="probed starts of inferd, inferd --no-grpc and the floor after the rounds, for a timeline [0]",
    )  # fmt: skip
    args = parser.parse_args()
    from_bytecode()
    ensure_model()
    chosen = [s for s in STARTERS if args.only is None or s.key in args.only.split(",")]
    load, expected = os.getloadavg(), expected_answer()
    outcomes = {starter.key: Outcome() for starter in chosen}
    helps: list[float] = []
    for round_ in range(1 - args.warmup_rounds, args.rounds + 1):
        print(f"round {round_}/{args.rounds}" + (" (warm-up)" if round_ < 1 else ""), flush=True)
        for starter in chosen:
            outcome = outcomes[starter.key]
            if outcome.skipped is not None:
                continue
            try:
                seconds, mib = cold_start(starter, expected)
            except BenchError as exc:
                outcome.skipped = str(exc).splitlines()[0]
                print(f"  {starter.label}: skipped: {exc}", flush=True)
                continue
            print(f"  {starter.label}: ready in {seconds:.3f} s, peak {mib:.1f} MiB", flush=True)
            if round_ >= 1:
                outcome.seconds.append(seconds)
                outcome.peak_mib.append(mib)
        if round_ >= 1 and any(not s.peer for s in chosen):
            helps.append(help_seconds(args.help_runs))
    phases = probed_starts(chosen, expected, args.phases)
    text = report(outcomes, helps, args, load, phases)
    return write_dated("cold-start", text)


if __name__ == "__main__":
    sys.exit(main())
