"""The V2 iris benchmark (issues 2 and 7): inferd against a bare Starlette floor and MLServer 1.7.

inferd runs with 1 worker, 2 workers, and 2 workers with adaptive batching (``BATCHING``); the floor
and MLServer never batch.

Starts each server in turn on free loopback ports, checks that it answers the iris request correctly,
then loads it with wrk at each concurrency (a warm-up run, then a measured run) and prints one table
of req/s, p50 and p99 latency with ratios against MLServer and the floor, the issue's targets as
PASS/FAIL, and the peak RSS of each server's process tree. Not part of CI; see bench/README.md.

    .venv/bin/python bench/v2_iris.py [--only inferd,floor,mlserver] [--duration 10s] [--warmup 3s]
                                      [--concurrency 1,16,64] [--rounds 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
VENV_BIN = Path(sys.prefix) / "bin"
EXAMPLE = ROOT / "examples" / "iris"
MODEL_PATH = EXAMPLE / "model.joblib"
LUA_SCRIPT = BENCH / "v2_iris.lua"
MLSERVER_ENV = BENCH / ".envs" / "mlserver"
MLSERVER_REQUIREMENTS = ("mlserver>=1.7,<1.8", "mlserver-sklearn>=1.7,<1.8", "uvloop<0.22")

HOST = "127.0.0.1"
INFER_PATH = "/v2/models/iris/infer"
READY_PATH = "/v2/health/ready"
FEATURES = [[5.1, 3.5, 1.4, 0.2]]
BODY = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": FEATURES}]},
    separators=(",", ":"),
).encode()

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 20.0
RSS_INTERVAL_S = 0.25
WRK_TIMEOUT = "10s"
TARGET_CONCURRENCY = 16
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
OTHER_CPU_WARN = 0.15  # cores used by processes other than the server, wrk and this script
CPU_COUNT = os.cpu_count() or 1

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)


class BenchError(Exception):
    """A server could not be prepared, started or checked; the others still run."""


# --------------------------------------------------------------------------------------------- servers


@dataclass(frozen=True)
class Launch:
    """How to start one server; ``port`` None means: read the port from inferd's ready line."""

    command: list[str]
    cwd: Path
    port: int | None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass(frozen=True)
class ServerSpec:
    key: str
    label: str
    group: str
    prepare: Callable[[Path], Launch]
    returns_probabilities: bool = True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def venv_tool(name: str) -> str:
    path = VENV_BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise BenchError(f"'{name}' is neither in {VENV_BIN} nor on PATH")
    return found


#: Adaptive batching for the batched inferd row: up to 64 rows, the first waiting at most 1 ms.
BATCHING = ("--max-batch-size", "64", "--max-batch-time-ms", "1")


def inferd_launch(workers: int, batching: bool = False) -> Callable[[Path], Launch]:
    def prepare(workdir: Path) -> Launch:
        command = [venv_tool("inferd"), "serve", str(EXAMPLE), "--port", "0", "--grpc-port", "0"]
        if workers > 1:
            command += ["--workers", str(workers)]
        if batching:
            command += BATCHING
        return Launch(command, ROOT, port=None)

    return prepare


def floor_launch(workdir: Path) -> Launch:
    port = free_port()
    command = [
        venv_tool("uvicorn"),
        "--app-dir", str(BENCH), "floor_app:app",
        "--host", HOST, "--port", str(port),
        "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip
    return Launch(command, ROOT, port)  # the app runs examples/iris/model.py, as inferd does


def mlserver_launch(workdir: Path) -> Launch:
    executable = ensure_mlserver_env()
    port = free_port()
    settings = {
        "debug": False,  # MLServer's default debug=true logs every request; inferd and the floor do not
        "parallel_workers": 0,
        "host": HOST,
        "http_port": port,
        "grpc_port": free_port(),
        "metrics_port": free_port(),
    }
    model_settings = {
        "name": "iris",
        "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": str(MODEL_PATH)},
    }
    (workdir / "settings.json").write_text(json.dumps(settings, indent=2))
    (workdir / "model-settings.json").write_text(json.dumps(model_settings, indent=2))
    return Launch([str(executable), "start", str(workdir)], workdir, port)


def ensure_env(env: Path, executable: str, requirements: Sequence[str], *, sklearn: bool = True) -> Path:
    """A peer in its own venv ``env``, created on first use with ``requirements`` and the same
    scikit-learn as ours (so a pickled model loads exactly as it does in inferd; ``sklearn=False``:
    without it); its ``executable``."""
    found = env / "bin" / executable
    if found.exists():
        return found
    if sklearn:
        requirements = [*requirements, f"scikit-learn=={metadata.version('scikit-learn')}"]
    console.print(f"installing {' '.join(requirements)} into {env.relative_to(ROOT)} (once)...")
    python3 = shutil.which("python3") or sys.executable
    pip = str(env / "bin" / "pip")
    for command in ([python3, "-m", "venv", str(env)], [pip, "install", "--quiet", *requirements]):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(command)} failed:\n{_tail(done.stdout + done.stderr)}")
    if not found.exists():
        raise BenchError(f"pip installed {requirements[0]} but {found} is missing")
    return found


def ensure_mlserver_env() -> Path:
    """MLServer in its own venv, bench/.envs/mlserver, created on first use."""
    return ensure_env(MLSERVER_ENV, "mlserver", MLSERVER_REQUIREMENTS)


SERVERS = (
    ServerSpec("inferd-1w", "inferd 1 worker", "inferd", inferd_launch(1)),
    ServerSpec("inferd-2w", "inferd 2 workers", "inferd", inferd_launch(2)),
    ServerSpec("inferd-2w-batch", "inferd 2 workers, batching", "inferd", inferd_launch(2, batching=True)),
    ServerSpec("floor", "floor", "floor", floor_launch),
    ServerSpec("mlserver", "MLServer 1.7", "mlserver", mlserver_launch, returns_probabilities=False),
)


# ------------------------------------------------------------------------------------ process handling


@dataclass
class Running:
    spec: ServerSpec
    process: subprocess.Popen[bytes]
    port: int
    stdout: Path
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (so field 4, ppid, is at index 1)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses


def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[19]))


def cpu_ticks(pids: Sequence[int]) -> int:
    """User plus system CPU time of these processes, in clock ticks."""
    total = 0
    for pid in pids:
        if (fields := _stat_fields(pid)) is not None:
            total += int(fields[11]) + int(fields[12])
    return total


def process_tree(root: int) -> list[tuple[int, int]]:
    """(pid, start time) of ``root`` and all its descendants."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _proc_stat(int(entry))) is not None:
            children.setdefault(stat[0], []).append((int(entry), stat[1]))
    root_stat = _proc_stat(root)
    if root_stat is None:
        return []
    tree, todo = [(root, root_stat[1])], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            tree.append(child)
            todo.append(child[0])
    return tree


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
        return 0


class PeakRss:
    """Samples the summed RSS of a process tree in a background thread and keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_bytes = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="peak-rss", daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(RSS_INTERVAL_S):
                return

    def sample(self) -> None:
        tree = process_tree(self.pid)
        self.peak_bytes = max(self.peak_bytes, sum(rss_bytes(pid) for pid, _ in tree))
        self.peak_processes = max(self.peak_processes, len(tree))


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of all CPUs together since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    everything = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return everything - idle, everything


def _own_and_children_ticks() -> float:
    """CPU ticks of this script and of the children it has waited for (wrk)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = os.times()
    return (children.ru_utime + children.ru_stime + own.user + own.system) * CLOCK_TICKS


class CpuMeter:
    """Cores used by the server and by everything else on the machine (other than wrk and us)."""

    def __init__(self, server_pid: int) -> None:
        self.pids = [pid for pid, _ in process_tree(server_pid)]
        self.server_start = cpu_ticks(self.pids)
        self.ours_start = _own_and_children_ticks()
        self.machine_start = machine_ticks()

    def read(self) -> tuple[float, float]:
        """(server cores, other cores) since the meter was made."""
        busy, everything = (now - then for now, then in zip(machine_ticks(), self.machine_start, strict=True))
        server = cpu_ticks(self.pids) - self.server_start
        ours = _own_and_children_ticks() - self.ours_start
        wall = max(everything / CPU_COUNT, 1)
        return server / wall, max(busy - server - ours, 0) / wall


def stop(process: subprocess.Popen[bytes]) -> str:
    """SIGTERM, wait, then SIGKILL whatever of the process tree is left; how it ended, in words."""
    tree = process_tree(process.pid)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
        code = process.returncode
        outcome = "stopped by SIGTERM" if code == -signal.SIGTERM else f"stopped (exit code {code})"
    except subprocess.TimeoutExpired:
        outcome = f"killed: still running {STOP_GRACE_S:.0f} s after SIGTERM"
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the server leads its own session and group
    for pid, started in tree[1:]:
        stat = _proc_stat(pid)
        if stat is not None and stat[1] == started:  # the same process, not a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    process.wait()
    return outcome


@contextlib.contextmanager
def serving(spec: ServerSpec, workdir: Path) -> Iterator[Running]:
    """Start a server, wait until it is ready, and always stop it again."""
    launch = spec.prepare(workdir)
    stdout, stderr = workdir / "stdout.log", workdir / "stderr.log"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            launch.command,
            cwd=launch.cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # Ctrl+C reaches only us; we stop the server ourselves
        )
    try:
        port = launch.port if launch.port is not None else _wait_for_ready_line(process, stdout, stderr)
        running = Running(spec, process, port, stdout, stderr)
        _wait_for_http_ready(running)
        yield running
    finally:
        console.print(f"  {spec.label}: {stop(process)}")


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _failed_to_start(stderr: Path, why: str) -> BenchError:
    return BenchError(f"{why}; the end of its stderr:\n{_tail(stderr.read_text(errors='replace'))}")


def _wait_for_ready_line(process: subprocess.Popen[bytes], stdout: Path, stderr: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    pattern = re.compile(r"inferd ready: http://[^\s:]+:(\d+)")
    while time.monotonic() < deadline:
        if match := pattern.search(stdout.read_text(errors="replace")):
            return int(match.group(1))
        if process.poll() is not None:
            raise _failed_to_start(stderr, f"exited with code {process.returncode}")
        time.sleep(0.1)
    raise _failed_to_start(stderr, f"printed no ready line in {START_TIMEOUT_S:.0f} s")


def _wait_for_http_ready(running: Running) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            raise _failed_to_start(running.stderr, f"exited with code {running.process.returncode}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            if request(running.port, "GET", READY_PATH)[0] == 200:
                return
        time.sleep(0.2)
    raise _failed_to_start(running.stderr, f"not ready in {START_TIMEOUT_S:.0f} s")


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    """One HTTP request, straight to the socket (no proxy settings apply)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# ------------------------------------------------------------------------------------- correctness


@dataclass(frozen=True)
class Expected:
    labels: list[int]
    probabilities: list[float]


def expected_answer() -> Expected:
    """What the shared model.joblib answers for the benchmark's request, computed here."""
    import joblib
    import numpy as np

    model = joblib.load(MODEL_PATH)
    features = np.asarray(FEATURES, dtype=np.float32)
    return Expected(
        [int(v) for v in model.predict(features)],
        [float(v) for v in model.predict_proba(features).ravel()],
    )


def _flat(data: Any) -> list[Any]:
    if isinstance(data, list):
        return [item for element in data for item in _flat(element)]
    return [data]


def check_answer(running: Running, expected: Expected) -> None:
    """The server answers 200 with a V2 body holding the right label (and probabilities)."""
    status, raw = request(running.port, "POST", INFER_PATH, BODY)
    if status != 200:
        raise BenchError(f"POST {INFER_PATH} answered {status}: {raw[:300]!r}")
    try:
        outputs = [_flat(output["data"]) for output in json.loads(raw)["outputs"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"not a V2 response body ({exc!r}): {raw[:300]!r}") from None
    if expected.labels not in [[int(v) for v in data] for data in outputs if _all_numbers(data)]:
        raise BenchError(f"no output holds the labels {expected.labels}: {raw[:300]!r}")
    if running.spec.returns_probabilities and not any(
        _close(data, expected.probabilities) for data in outputs
    ):
        raise BenchError(f"no output holds the probabilities {expected.probabilities}: {raw[:300]!r}")


def _all_numbers(data: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data)


def _close(data: list[Any], want: list[float]) -> bool:
    if len(data) != len(want) or not _all_numbers(data):
        return False
    return all(abs(a - b) < 1e-5 for a, b in zip(data, want, strict=True))


# --------------------------------------------------------------------------------------------- wrk


@dataclass(frozen=True)
class RunResult:
    server: str
    label: str
    concurrency: int
    round: int
    threads: int
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    non_2xx: int
    socket_errors: int
    server_cpu: float
    other_cpu: float

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors

    @property
    def disturbed(self) -> bool:
        return self.other_cpu > OTHER_CPU_WARN


def wrk_threads(concurrency: int) -> int:
    """One wrk thread for one connection, else two: the server needs the machine's cores more."""
    return 1 if concurrency == 1 else min(2, concurrency)


def run_wrk(running: Running, concurrency: int, seconds: int, round_: int = 0) -> RunResult:
    threads = wrk_threads(concurrency)
    command = [
        "wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", WRK_TIMEOUT,
        "-s", str(LUA_SCRIPT), running.url + INFER_PATH,
    ]  # fmt: skip
    meter = CpuMeter(running.process.pid)
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 60)
    server_cpu, other_cpu = meter.read()
    match = re.search(r"^V2_IRIS_RESULT (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise BenchError(f"wrk failed (exit {done.returncode}):\n{_tail(done.stdout + done.stderr)}")
    raw = json.loads(match.group(1))
    elapsed = raw["duration_us"] / 1e6
    return RunResult(
        server=running.spec.key,
        label=running.spec.label,
        concurrency=concurrency,
        round=round_,
        threads=threads,
        requests=raw["requests"],
        seconds=round(elapsed, 3),
        rps=raw["requests"] / elapsed,
        p50_ms=raw["p50_us"] / 1000,
        p90_ms=raw["p90_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        mean_ms=raw["mean_us"] / 1000,
        max_ms=raw["max_us"] / 1000,
        non_2xx=raw["non_2xx"],
        socket_errors=raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"],
        server_cpu=round(server_cpu, 2),
        other_cpu=round(other_cpu, 2),
    )


# ------------------------------------------------------------------------------------------ running


@dataclass
class ServerOutcome:
    key: str
    label: str
    runs: list[RunResult] = field(default_factory=list)
    peak_rss_bytes: int = 0
    peak_processes: int = 0
    error: str | None = None


def bench_server(
    spec: ServerSpec, args: argparse.Namespace, expected: Expected, outcome: ServerOutcome, round_: int
) -> None:
    """Start, check and measure one server, filling ``outcome`` as it goes (so Ctrl+C keeps what ran)."""
    console.print(f"[bold]{spec.label}[/]" + (f" (round {round_}/{args.rounds})" if args.rounds > 1 else ""))
    try:
        with tempfile.TemporaryDirectory(prefix=f"v2-iris-{spec.key}-") as tmp:
            with serving(spec, Path(tmp)) as running, PeakRss(running.process.pid) as rss:
                try:
                    console.print(f"  ready at {running.url}")
                    check_answer(running, expected)
                    for concurrency in args.concurrency:
                        run_wrk(running, concurrency, args.warmup)
                        outcome.runs.append(run_wrk(running, concurrency, args.duration, round_))
                        console.print(f"  {_progress(outcome.runs[-1])}")
                finally:
                    rss.sample()
                    outcome.peak_rss_bytes = max(outcome.peak_rss_bytes, rss.peak_bytes)
                    outcome.peak_processes = max(outcome.peak_processes, rss.peak_processes)
    except BenchError as exc:
        outcome.error = str(exc)
        console.print(f"  [red]failed:[/] {exc}")


def _progress(result: RunResult) -> str:
    errors = f", [red]{result.errors} errors[/]" if result.errors else ""
    other = f", [yellow]other processes used {result.other_cpu:.2f} cores[/]" if result.disturbed else ""
    return (
        f"c{result.concurrency:<3} {result.rps:9.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
        f"p99 {result.p99_ms:6.2f} ms  server CPU {result.server_cpu:.2f}{errors}{other}"
    )


def ensure_model() -> None:
    """Every server loads the same fitted model: examples/iris/model.joblib (train.py writes it)."""
    if MODEL_PATH.exists():
        return
    console.print(f"training {MODEL_PATH.relative_to(ROOT)} with examples/iris/train.py...")
    subprocess.run([sys.executable, str(EXAMPLE / "train.py"), str(MODEL_PATH)], check=True)


def require_wrk() -> str | None:
    if shutil.which("wrk") is None:
        return (
            "wrk is not installed. On Debian or Ubuntu: sudo apt-get update && sudo apt-get install -y wrk "
            "(macOS: brew install wrk)"
        )
    return None


# ----------------------------------------------------------------------------------------- reporting


@dataclass(frozen=True)
class TargetResult:
    name: str
    status: str  # PASS, FAIL or N/A
    detail: str


@dataclass(frozen=True)
class Cell:
    """Every round of one server at one concurrency. The median run by req/s stands for them all,
    taken among the runs no other process disturbed when there are any."""

    runs: tuple[RunResult, ...]

    @property
    def median(self) -> RunResult:
        calm = [run for run in self.runs if not run.disturbed] or list(self.runs)
        return sorted(calm, key=lambda run: run.rps)[(len(calm) - 1) // 2]

    @property
    def rps(self) -> float:
        return self.median.rps

    @property
    def non_2xx(self) -> int:
        return sum(run.non_2xx for run in self.runs)

    @property
    def socket_errors(self) -> int:
        return sum(run.socket_errors for run in self.runs)

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors

    @property
    def disturbed(self) -> bool:
        return self.median.disturbed


def find_cell(outcomes: Sequence[ServerOutcome], key: str, concurrency: int) -> Cell | None:
    runs = tuple(
        run
        for outcome in outcomes
        for run in outcome.runs
        if run.server == key and run.concurrency == concurrency
    )
    return Cell(runs) if runs else None


def _target(
    outcomes: Sequence[ServerOutcome],
    name: str,
    key: str,
    base_key: str,
    factor: float,
    concurrency: int = TARGET_CONCURRENCY,
) -> TargetResult:
    """PASS when ``key``'s req/s at ``concurrency`` is at least ``factor`` times ``base_key``'s."""
    cell, base = find_cell(outcomes, key, concurrency), find_cell(outcomes, base_key, concurrency)
    if cell is None or base is None:
        missing = [f"{k} c{concurrency}" for k, c in ((key, cell), (base_key, base)) if c is None]
        return TargetResult(name, "N/A", f"not measured: {', '.join(missing)}")
    ratio = cell.rps / base.rps if base.rps else float("inf")
    detail = (
        f"{cell.median.label} {cell.rps:,.0f} req/s / {base.median.label} {base.rps:,.0f} req/s "
        f"= {ratio:.2f}x (needs >= {factor:.2f}x)"
    )
    if cell.errors or base.errors:
        return TargetResult(name, "FAIL", f"{detail}; a run had errors")
    if cell.disturbed or base.disturbed:
        detail += "; other processes used the CPU during a run"
    return TargetResult(name, "PASS" if ratio >= factor else "FAIL", detail)


def evaluate_targets(outcomes: Sequence[ServerOutcome]) -> list[TargetResult]:
    c = TARGET_CONCURRENCY
    return [
        _target(outcomes, f"inferd 1 worker c{c} >= 2x MLServer", "inferd-1w", "mlserver", 2.0),
        _target(outcomes, f"inferd 1 worker c{c} >= 85% of floor", "inferd-1w", "floor", 0.85),
        _target(outcomes, f"inferd 2 workers c{c} >= 1.8x 1 worker", "inferd-2w", "inferd-1w", 1.8),
        # issue 7: batching on, 2 workers, concurrency 64
        _target(outcomes, "inferd 2 workers batching c64 >= 1.5x floor", "inferd-2w-batch", "floor", 1.5, 64),
        _target(
            outcomes, "inferd 2 workers batching c64 >= 5x MLServer", "inferd-2w-batch", "mlserver", 5.0, 64
        ),
        _cpu_target(outcomes, f"inferd 1 worker c{c} server CPU per request <= 1.2x floor's", 1.2),
    ]


def _cpu_target(outcomes: Sequence[ServerOutcome], name: str, factor: float) -> TargetResult:
    """PASS when inferd's server CPU time per request (1 worker, batching off) is at most ``factor``
    times the floor's at the target concurrency."""
    cell, base = (
        find_cell(outcomes, "inferd-1w", TARGET_CONCURRENCY),
        find_cell(outcomes, "floor", TARGET_CONCURRENCY),
    )
    if cell is None or base is None or not cell.rps or not base.rps:
        return TargetResult(name, "N/A", "not measured: inferd-1w and floor are both needed")
    ours = cell.median.server_cpu / cell.rps * 1e6
    theirs = base.median.server_cpu / base.rps * 1e6
    ratio = ours / theirs
    detail = f"{ours:.0f} us / {theirs:.0f} us = {ratio:.2f}x (needs <= {factor:.2f}x)"
    return TargetResult(name, "PASS" if ratio <= factor else "FAIL", detail)


def _ratio(cell: Cell, base: Cell | None) -> str:
    if base is None or not base.rps:
        return "-"
    return f"{cell.rps / base.rps:.2f}x"


COLUMNS = (
    "server", "concurrency", "req/s", "p50 ms", "p99 ms", "errors",
    "vs MLServer", "vs floor", "server CPU", "other CPU",
)  # fmt: skip


def results_table(outcomes: Sequence[ServerOutcome], args: argparse.Namespace) -> Table:
    rounds = f", median of {args.rounds} rounds" if args.rounds > 1 else ""
    table = Table(
        title=f"V2 iris: POST {INFER_PATH}, 1x4 FP32 JSON, {args.duration} s per run{rounds}, "
        f"{CPU_COUNT} cores",
        caption_justify="left",
    )
    for name in COLUMNS:
        table.add_column(name, justify="left" if name == "server" else "right")
    if args.rounds > 1:
        table.add_column("req/s min-max", justify="right")
    cells = []
    for outcome in outcomes:
        if outcome.error is not None and not outcome.runs:
            table.add_row(outcome.label, "-", "[red]failed[/]", *["-"] * (len(table.columns) - 3))
        for concurrency in args.concurrency:
            if (cell := find_cell(outcomes, outcome.key, concurrency)) is not None:
                cells.append(cell)
                table.add_row(*_row(cell, outcomes, args.rounds > 1))
        if outcome is not outcomes[-1]:
            table.add_section()
    table.caption = _footnotes(any(cell.errors for cell in cells), any(cell.disturbed for cell in cells))
    return table


def _row(cell: Cell, outcomes: Sequence[ServerOutcome], spread: bool) -> list[str]:
    run = cell.median
    errors = f"[red]{cell.non_2xx} non-2xx, {cell.socket_errors} socket ![/]" if cell.errors else "0"
    other = f"[yellow]{run.other_cpu:.2f} *[/]" if run.disturbed else f"{run.other_cpu:.2f}"
    row = [
        run.label,
        str(run.concurrency),
        f"{run.rps:,.0f}",
        f"{run.p50_ms:.2f}",
        f"{run.p99_ms:.2f}",
        errors,
        _ratio(cell, find_cell(outcomes, "mlserver", run.concurrency)),
        _ratio(cell, find_cell(outcomes, "floor", run.concurrency)),
        f"{run.server_cpu:.2f}",
        other,
    ]
    if spread:
        row.append(f"{min(r.rps for r in cell.runs):,.0f}-{max(r.rps for r in cell.runs):,.0f}")
    return row


def _footnotes(errors: bool, disturbed: bool) -> str:
    notes = [
        "MLServer's sklearn runtime returns the predict output only; inferd and the floor run "
        "examples/iris/model.py, which returns the label and the class probabilities.",
        f"wrk runs on the same {CPU_COUNT} cores (-t1 at c1, -t2 above); ratios are of req/s at equal "
        "concurrency.",
        "server CPU: cores the server's process tree used; other CPU: cores used by anything but the "
        "server, wrk and this script.",
    ]
    if errors:
        notes.append("[red]! runs with non-2xx responses or socket errors: their numbers are not valid.[/]")
    if disturbed:
        notes.append(
            f"[yellow]* other processes used more than {OTHER_CPU_WARN} cores during a run: "
            "the numbers are disturbed.[/]"
        )
    return "\n".join(notes)


def print_report(
    outcomes: Sequence[ServerOutcome], targets: Sequence[TargetResult], args: argparse.Namespace
) -> None:
    console.print()
    if not any(outcome.runs or outcome.error for outcome in outcomes):
        console.print("no results")
        return
    console.print(results_table(outcomes, args))
    console.print("\n[bold]Targets (issues 2 and 7)[/]")
    colour = {"PASS": "green", "FAIL": "red", "N/A": "yellow"}
    for target in targets:
        console.print(f"  [{colour[target.status]}]{target.status:<4}[/] {target.name}: {target.detail}")
    console.print("\n[bold]Peak RSS[/] (sum over the server's process tree, sampled every 0.25 s)")
    for outcome in outcomes:
        if outcome.peak_rss_bytes:
            processes = f"{outcome.peak_processes} process{'es' if outcome.peak_processes > 1 else ''}"
            console.print(f"  {outcome.label:<20} {outcome.peak_rss_bytes / 2**20:7.1f} MiB  ({processes})")
    for outcome in outcomes:
        if outcome.error is not None:
            console.print(f"\n[red]{outcome.label} failed:[/] {outcome.error}")


def write_json(
    path: Path, outcomes: Sequence[ServerOutcome], targets: Sequence[TargetResult], args: argparse.Namespace
) -> None:
    document = {
        "meta": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
            "cpu_count": CPU_COUNT,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "inferd": _version("inferd"),
            "wrk": _wrk_version(),
            "inferd_environment": {k: v for k, v in os.environ.items() if k.startswith("INFERD_")},
        },
        "servers": [
            {key: value for key, value in asdict(outcome).items() if key != "runs"} for outcome in outcomes
        ],
        "runs": [asdict(run) for outcome in outcomes for run in outcome.runs],
        "targets": [asdict(target) for target in targets],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    console.print(f"\nwrote {path}")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _wrk_version() -> str:
    done = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).splitlines()[0] if (done.stdout + done.stderr) else "?"


# ---------------------------------------------------------------------------------------------- cli


def _seconds(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*(s|m)?", text.strip())
    if match is None or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"expected a duration like 10s or 1m, got '{text}'")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,16,64, got '{text}'") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("concurrency values must be positive")
    return values


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return int(text)


def _only(text: str) -> list[ServerSpec]:
    names = {part.strip() for part in text.split(",") if part.strip()}
    known = {spec.group for spec in SERVERS} | {spec.key for spec in SERVERS}
    if not names or names - known:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(sorted(known))}; got '{text}'")
    return [spec for spec in SERVERS if spec.group in names or spec.key in names]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        type=_only,
        default=list(SERVERS),
        metavar="NAMES",
        help="comma-separated servers: inferd (all three), inferd-1w, inferd-2w, inferd-2w-batch, floor, "
        "mlserver [default: all]",
    )
    parser.add_argument("--duration", type=_seconds, default=10, help="measured run per concurrency [10s]")
    parser.add_argument(
        "--warmup", type=_seconds, default=3, help="warm-up run before each measured run [3s]"
    )
    parser.add_argument("--concurrency", type=_concurrency, default=[1, 16, 64], help="connections [1,16,64]")
    parser.add_argument(
        "--rounds",
        type=_positive,
        default=1,
        help="run the whole sequence this many times and report the median run of each cell [1]",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON here")
    return parser.parse_args(argv)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if (problem := require_wrk()) is not None:
        console.print(f"[red]error:[/] {problem}")
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_interrupt)  # stop the servers on SIGTERM as on Ctrl+C
    outcomes: list[ServerOutcome] = []
    interrupted = False
    try:
        ensure_model()
        expected = expected_answer()
        outcomes = [ServerOutcome(spec.key, spec.label) for spec in args.only]
        for round_ in range(1, args.rounds + 1):
            for spec, outcome in zip(args.only, outcomes, strict=True):
                if outcome.error is None:
                    bench_server(spec, args, expected, outcome, round_)
    except KeyboardInterrupt:
        interrupted = True
        console.print("\n[yellow]interrupted: the servers are stopped; partial results follow[/]")
    targets = evaluate_targets(outcomes)
    print_report(outcomes, targets, args)
    if args.json is not None:
        write_json(args.json, outcomes, targets, args)
    if interrupted:
        return 130
    return 1 if any(outcome.error for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
